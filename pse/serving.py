"""What serving engines share: the structure a request asks for by flat keys, compiled once
per content, and a request's engine kept in step with its output tokens.

Serving engines carry a request's extra arguments as flat values (vLLM's `vllm_xargs` holds
strings, numbers and lists only), so a structure travels as JSON text (or, offline, as the
Python object) under one of these keys:

- `pse_json_schema`: a JSON Schema; options `pse_whitespace` ("compact", the default,
  "flexible", or the most blanks in a row) and `pse_property_order` ("schema" or "any");
- `pse_grammar`: a Lark grammar;
- `pse_regex`: a regular expression;
- `pse_tools`: OpenAI tool definitions, with `pse_tool_format` (default "hermes"),
  `pse_tool_choice` ("auto", "required", "none", a tool's name, or OpenAI's dict as JSON) and
  `pse_parallel_tool_calls` (JSON `true` arrives as 1).

`pse_gbnf` is reserved for GBNF grammars and refused until pse reads them.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Hashable, Mapping, Sequence

from pse.bounded_cache import BoundedCache
from pse.engine import StructuringEngine
from pse.errors import PSEError
from pse.machines import StateMachine

STRUCTURE_KEYS = ("pse_json_schema", "pse_grammar", "pse_gbnf", "pse_regex", "pse_tools")
OPTION_KEYS = ("pse_whitespace", "pse_property_order", "pse_tool_format", "pse_tool_choice",
               "pse_parallel_tool_calls")


class RequestError(PSEError):
    """A request's structure is malformed or does not compile; the message says which key."""


def requested_structure(args: Mapping[str, Any] | None
                        ) -> tuple[Hashable, Callable[[], StateMachine]] | None:
    """The structure that a request's extra arguments ask for: a cache key (its content) and a
    function that builds it; None when they ask for none.

    Raises:
        RequestError: two structures, an unknown pse_ key, or a value of the wrong kind.
    """
    if not args:
        return None
    asked = [k for k in STRUCTURE_KEYS if args.get(k) is not None]
    unknown = [k for k in args if k.startswith("pse_") and k not in STRUCTURE_KEYS + OPTION_KEYS]
    if unknown:
        raise RequestError(f"unknown key {unknown[0]!r}: pse reads {', '.join(STRUCTURE_KEYS)}"
                           f" and the options {', '.join(OPTION_KEYS)}")
    if not asked:
        stray = [k for k in OPTION_KEYS if k in args]
        if stray:
            raise RequestError(f"{stray[0]!r} without a structure (one of "
                               f"{', '.join(STRUCTURE_KEYS)})")
        return None
    if len(asked) > 1:
        raise RequestError(f"one structure per request: got {' and '.join(asked)}")
    key = asked[0]
    value = args[key]
    options = {k: _flag(args[k]) if k == "pse_parallel_tool_calls" else args[k]
               for k in OPTION_KEYS if args.get(k) is not None}
    cache_key = (key, _canonical(value), tuple(sorted((k, _canonical(v))
                                                      for k, v in options.items())))
    if key == "pse_gbnf":
        raise RequestError("pse_gbnf: GBNF grammars are not read yet; send the grammar in "
                           "Lark syntax as pse_grammar")
    return cache_key, lambda: _build(key, value, options)


def _build(key: str, value: Any, options: dict) -> StateMachine:
    from pse.grammar import Grammar
    from pse.json_schema import JsonSchema
    from pse.regex import Regex
    from pse.tools import ToolCalls

    if key == "pse_json_schema":
        return JsonSchema(_json(key, value), whitespace=options.get("pse_whitespace"),
                          property_order=options.get("pse_property_order", "schema"))
    if key == "pse_grammar":
        return Grammar.from_lark(_text(key, value))
    if key == "pse_regex":
        return Regex(_text(key, value))
    choice = options.get("pse_tool_choice", "auto")
    if isinstance(choice, str) and choice.lstrip().startswith("{"):
        choice = _json("pse_tool_choice", choice)
    elif isinstance(choice, str) and choice not in ("auto", "required", "none"):
        choice = {"type": "function", "function": {"name": choice}}
    return ToolCalls(_json(key, value), format=options.get("pse_tool_format", "hermes"),
                     tool_choice=choice,
                     parallel_tool_calls=options.get("pse_parallel_tool_calls", True),
                     whitespace=options.get("pse_whitespace", "flexible"))


def _flag(value: Any) -> Any:
    """JSON true and false arrive as 1 and 0 through vLLM's REST extra arguments."""
    return bool(value) if value in (0, 1) and not isinstance(value, float) else value


def _json(key: str, value: Any) -> Any:
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except json.JSONDecodeError as e:
            raise RequestError(f"{key} is not JSON: {e}") from None
    return value


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise RequestError(f"{key} must be text, got {type(value).__name__}")
    return value


def _canonical(value: Any) -> str:
    """One text per content: JSON given as text and as objects compile once."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


class StructureCache:
    """Engines for requests' structures, compiled once per content and copied per request;
    the most recently used `size` are kept (a stream of distinct schemas stays bounded).

    Args:
        vocab: the vocabulary of the served model.
        size: how many compiled structures to keep.
    """

    def __init__(self, vocab: Any, size: int = 128) -> None:
        self.vocab = vocab
        self._engines = BoundedCache(size)

    def engine(self, args: Mapping[str, Any] | None) -> StructuringEngine | None:
        """A fresh engine for the structure `args` asks for, or None when they ask for none.

        Raises:
            RequestError: the structure is malformed or does not compile.
        """
        asked = requested_structure(args)
        if asked is None:
            return None
        key, build = asked
        template = self._engines.get(key)
        if template is None:
            template = StructuringEngine(self.vocab)
            try:
                template.configure(build())
            except RequestError:
                raise
            except PSEError as e:
                raise RequestError(f"{key[0]}: {e}") from e
            self._engines.put(key, template)
        return template.copy()


def check_request(args: Mapping[str, Any] | None) -> None:
    """Compile the structure `args` ask for (without a vocabulary), to refuse a bad request
    before it is scheduled.

    Raises:
        RequestError: the structure is malformed or does not compile.
    """
    asked = requested_structure(args)
    if asked is None:
        return
    key, build = asked
    if _CHECKED.get(key):
        return
    try:
        build().compile()
    except RequestError:
        raise
    except PSEError as e:
        raise RequestError(f"{key[0]}: {e}") from e
    _CHECKED.put(key, True)


_CHECKED = BoundedCache(1024)


class ConstrainedRow:
    """A request's engine kept in step with its output tokens.

    Args:
        engine: the request's own engine.
        output_ids: the request's output ids; a live list that the serving engine extends.

        failed: why the row cannot be constrained from the start (its structure did not
            compile), else None.

    Attributes:
        failed: None, or why the row can go no further (a structure that did not compile, a
            token its structure refuses, a dead end): such a row is allowed nothing but EOS.
    """

    def __init__(self, engine: StructuringEngine | None, output_ids: Sequence[int],
                 failed: str | None = None) -> None:
        self.engine = engine
        self.output_ids = output_ids
        self.consumed = 0
        self.failed = failed if engine is not None else failed or "no structure"
        self.reported = False  # whether the failure was logged

    def advance(self) -> None:
        """Commit the output tokens that came since the last call."""
        ids = self.output_ids
        while self.failed is None and self.consumed < len(ids):
            if self.engine.is_finished:
                break
            token = ids[self.consumed]
            if not self.engine.consume_token(token):
                self.failed = f"token {token} is not allowed by the structure"
            self.consumed += 1
