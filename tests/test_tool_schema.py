"""tool_schema and normalize_tools: the schemas accept and refuse what the functions'
hints do (checked with jsonschema, and against pydantic's own validation), docstrings in
three styles, and bad tools named."""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import warnings
from typing import Annotated, Any, Literal, Optional, Sequence, TypedDict, Union

import jsonschema
import pytest

from pse import JsonSchema, SchemaError, tool_schema
from pse.tool_schema import normalize_tools


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Address(TypedDict):
    street: str
    number: int


def everything(name: str, count: int, ratio: float, flag: bool, tags: list[str],
               pair: tuple[int, str], many: tuple[float, ...], unique: set[str],
               scores: dict[str, float], maybe: Optional[int], either: Union[int, str],
               mode: Literal["fast", "slow"], color: Color, point: Point, address: Address,
               note: Annotated[str, "a short note"], anything: Any, seq: Sequence[bool],
               level: int = 3, label: str | None = None) -> None:
    """Do everything.

    Args:
        name: the name,
            over two lines.
        count (int): how many.
    """


VALID = dict(name="n", count=1, ratio=0.5, flag=True, tags=["a"], pair=[1, "x"], many=[1.5],
             unique=["a", "b"], scores={"a": 1.0}, maybe=None, either="s", mode="fast",
             color="red", point={"x": 1}, address={"street": "s", "number": 2}, note="hi",
             anything=[{}], seq=[False])
INVALID = [("count", "1"), ("ratio", "x"), ("tags", [1]), ("pair", [1]), ("pair", [1, "a", 2]),
           ("unique", ["a", "a"]), ("scores", {"a": "b"}), ("maybe", "x"), ("either", 1.5),
           ("mode", "medium"), ("color", "green"), ("point", {"y": 1}),
           ("address", {"street": "s"}), ("seq", [1])]


def test_schema_of_every_hint_against_jsonschema():
    tool = tool_schema(everything)
    function = tool["function"]
    assert tool["type"] == "function" and function["name"] == "everything"
    assert function["description"] == "Do everything."
    params = function["parameters"]
    props = params["properties"]
    assert props["name"]["description"] == "the name, over two lines."
    assert props["count"]["description"] == "how many."
    assert props["note"]["description"] == "a short note"
    assert props["level"]["default"] == 3
    assert set(params["required"]) == set(VALID)
    jsonschema.validate(VALID, params)
    for key, value in INVALID:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**VALID, key: value}, params)
    for missing in ("name", "point"):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({k: v for k, v in VALID.items() if k != missing}, params)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**VALID, "extra": 1}, params)
    JsonSchema(params).compile()        # and pse compiles it


def test_agrees_with_pydantic():
    def f(a: int, b: list[Optional[str]], c: Literal[1, 2] = 1, d: dict[str, float] = {}):
        pass

    params = tool_schema(f)["function"]["parameters"]
    adapter = pydantic.TypeAdapter(pydantic.create_model(
        "F", a=(int, ...), b=(list[Optional[str]], ...), c=(Literal[1, 2], 1),
        d=(dict[str, float], {}), __config__=pydantic.ConfigDict(extra="forbid", strict=True)))
    samples = [{"a": 1, "b": ["x", None]}, {"a": 1, "b": [], "c": 2, "d": {"p": 1.5}},
               {"a": "1", "b": []}, {"b": []}, {"a": 1, "b": [3]}, {"a": 1, "b": [], "c": 3},
               {"a": 1, "b": [], "d": {"p": "x"}}, {"a": 1, "b": [], "z": 0}]
    for sample in samples:
        try:
            adapter.validate_python(sample)
            expected = True
        except pydantic.ValidationError:
            expected = False
        assert jsonschema.Draft202012Validator(params).is_valid(sample) == expected, sample


def test_docstring_styles():
    def rest(a: int, b: str) -> None:
        """Summary line.

        :param a: the first.
        :param str b: the second,
            continued.
        :returns: nothing.
        """

    def numpy_style(a: int, b: str) -> None:
        """Summary
        on two lines.

        Parameters
        ----------
        a : int
            the first.
        b : str
            the second.

        Returns
        -------
        None
        """

    for func, summary in ((rest, "Summary line."), (numpy_style, "Summary on two lines.")):
        function = tool_schema(func)["function"]
        assert function["description"] == summary
        props = function["parameters"]["properties"]
        assert props["a"]["description"] == "the first."
        assert props["b"]["description"].startswith("the second")

    def bare(a: int) -> None:
        pass

    assert "description" not in tool_schema(bare)["function"]


pydantic = pytest.importorskip("pydantic")


# (at module level: the hints of this file are strings, resolved in its globals)
class Item(pydantic.BaseModel):
    sku: str
    quantity: int


class Order(pydantic.BaseModel):
    """An order of items."""
    items: list[Item]
    note: Optional[str] = None


def test_pydantic_models_with_nested_definitions():
    def place(order: Order, express: bool = False) -> None:
        """Place an order."""

    params = tool_schema(place)["function"]["parameters"]
    valid = {"order": {"items": [{"sku": "a", "quantity": 2}]}}
    jsonschema.validate(valid, params)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"order": {"items": [{"sku": "a"}]}}, params)
    assert JsonSchema(params).matches('{"order":{"items":[{"sku":"a","quantity":2}]}}')
    [tool] = normalize_tools([Order])
    assert tool["function"]["name"] == "Order"
    assert tool["function"]["description"] == "An order of items."
    jsonschema.validate({"items": []}, tool["function"]["parameters"])


class Node(pydantic.BaseModel):
    label: str
    children: list[Node] = []


def test_a_pydantic_model_that_refers_to_itself_as_a_parameter():
    def build(root: Node, spare: Optional[Node] = None) -> None:
        """Build a tree."""

    params = tool_schema(build)["function"]["parameters"]
    machine = JsonSchema(params)
    validator = jsonschema.Draft202012Validator(params)
    for value in ({"root": {"label": "a", "children": [{"label": "b", "children": []}]}},
                  {"root": {"label": "a"}, "spare": {"label": "c", "children": []}},
                  {"root": {"label": "a", "children": [{"children": []}]}}):
        assert machine.matches(json.dumps(value, separators=(",", ":"))) == \
            validator.is_valid(value), value


class Leaf(pydantic.BaseModel):
    v: int


class Wrap(pydantic.BaseModel):
    leaf: Leaf


def test_one_model_directly_and_inside_another():
    def f(a: Leaf, b: Wrap) -> None:
        """F."""

    params = tool_schema(f)["function"]["parameters"]
    assert set(params["$defs"]) == {"Leaf", "Wrap"}
    machine = JsonSchema(params)
    for value, valid in (({"a": {"v": 1}, "b": {"leaf": {"v": 2}}}, True),
                         ({"a": {"v": 1}, "b": {"leaf": {"v": "x"}}}, False)):
        assert machine.matches(json.dumps(value, separators=(",", ":"))) == valid


def test_constraints_in_annotated_hints():
    def book(nights: Annotated[int, pydantic.Field(ge=1, le=14)],
             weight: Annotated[float, "kilograms", pydantic.Field(gt=0)] = 1.0,
             ratio: float = float("nan")) -> None:
        """Book a room."""

    params = tool_schema(book)["function"]["parameters"]
    assert params["properties"]["weight"]["description"] == "kilograms"
    assert "default" not in params["properties"]["ratio"]  # (JSON has no NaN)
    machine = JsonSchema(params)
    validator = jsonschema.Draft202012Validator(params)
    for value in ({"nights": 3}, {"nights": 0}, {"nights": 15}, {"nights": 2, "weight": 0},
                  {"nights": 2, "weight": 0.5, "ratio": 2}):
        assert machine.matches(json.dumps(value, separators=(",", ":"))) == \
            validator.is_valid(value), value


def test_partials_and_callable_objects():
    # a partial is its function less what it binds (a handle bound for the tool is no
    # argument the model gives); a callable object is read from its __call__
    def search(db: object, query: str, limit: int = 3, *, strict: bool = False) -> list:
        """Search the database.

        Args:
            query: what to find.
        """

    tool = tool_schema(functools.partial(search, object(), limit=5))["function"]
    assert tool["name"] == "search" and tool["description"] == "Search the database."
    assert tool["parameters"]["properties"] == {
        "query": {"type": "string", "description": "what to find."},
        "strict": {"type": "boolean", "default": False}}
    assert tool["parameters"]["required"] == ["query"]
    with pytest.raises(SchemaError, match="'db'"):  # (unbound: an object is no JSON value)
        tool_schema(functools.partial(search, limit=5))

    class Lookup:
        """A lookup."""

        def __call__(self, key: str) -> str:
            """Look a key up."""

    tool = tool_schema(Lookup())["function"]
    assert tool["name"] == "Lookup" and tool["description"] == "Look a key up."
    assert tool["parameters"]["properties"] == {"key": {"type": "string"}}
    assert normalize_tools([functools.partial(Lookup())])[0]["function"]["name"] == "Lookup"


def test_bad_functions_are_named():
    def no_hint(a, b: int) -> None:
        pass

    def star(*args: int) -> None:
        pass

    def positional(a: int, /) -> None:
        pass

    def odd(a: complex) -> None:
        pass

    def keys(a: dict[int, str]) -> None:
        pass

    for func, match in ((no_hint, "'a' has no type hint"), (star, "'args'"),
                        (positional, "positional-only"), (odd, "complex"),
                        (keys, "keys are strings")):
        with pytest.raises(SchemaError, match=match):
            tool_schema(func)
    with pytest.raises(TypeError):
        tool_schema(3)


def test_normalize_tools():
    flat = {"name": "f", "parameters": {"type": "object"}}
    nested = {"type": "function", "function": {"name": "g", "description": "G."}}
    out = normalize_tools([flat, nested, everything])
    assert [t["function"]["name"] for t in out] == ["f", "g", "everything"]
    assert out[1]["function"]["parameters"] == {"type": "object", "properties": {}}
    for bad, match in (([flat, flat], "two tools are named 'f'"), ([], "empty"),
                       ([{"type": "retrieval"}], "'retrieval'"), ([{"name": ""}], "name"),
                       ([{"name": "h", "parameters": 3}], "parameters")):
        with pytest.raises(SchemaError, match=match):
            normalize_tools(bad)
    for bad in (flat, "f", everything):
        with pytest.raises(TypeError, match="list"):
            normalize_tools(bad)
    with pytest.raises(TypeError):
        normalize_tools([3])


def test_unknown_keys_of_a_tool_are_named():
    with pytest.warns(UserWarning, match=r"tools\[0\]: 'paramters' .* ignored \(did you mean "
                                         "'parameters'"):
        normalize_tools([{"name": "f", "paramters": {"type": "object"}}])
    with pytest.warns(UserWarning, match=r"tools\[0\]: 'x' is not a key"):
        normalize_tools([{"type": "function", "function": {"name": "g"}, "x": 1}])
    # Anthropic's input_schema is the parameters (its "type" is "custom")
    for anthropic in ({"name": "h", "input_schema": {"type": "object", "required": ["a"]}},
                      {"type": "custom", "name": "h", "input_schema": {
                          "type": "object", "required": ["a"]}}):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            [tool] = normalize_tools([anthropic])
        assert tool["function"]["parameters"] == {"type": "object", "required": ["a"]}
    with pytest.warns(UserWarning, match="'input_schema' ignored"):
        normalize_tools([{"name": "h", "parameters": {"type": "object"}, "input_schema": {}}])
