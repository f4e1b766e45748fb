"""What serving engines share: the structure a request asks for by flat keys, compiled once
per content, and a request's engine kept in step with its output tokens.

Serving engines carry a request's extra arguments as flat values (vLLM's `vllm_xargs` holds
strings, numbers and lists only), so a structure travels as JSON text (or, offline, as the
Python object) under one of these keys:

- `pse_json_schema`: a JSON Schema; options `pse_whitespace` ("compact", the default,
  "flexible", or the most blanks in a row) and `pse_property_order` ("schema" or "any");
- `pse_grammar`: a Lark grammar;
- `pse_gbnf`: a GBNF grammar (llama.cpp's format);
- `pse_regex`: a regular expression;
- `pse_tools`: OpenAI tool definitions, with `pse_tool_format` (default "hermes"),
  `pse_tool_choice` ("auto", "required", "none", a tool's name, or OpenAI's dict as JSON) and
  `pse_parallel_tool_calls` (JSON `true` arrives as 1).

Serving engines' own structured-output requests (vLLM's `response_format`, `structured_outputs`;
SGLang's `json_schema`, `regex`, `ebnf`, `structural_tag`) name a kind and a text; pse's
backends in those engines build them with `standard_structure`, and keep each request's engine
with `ServedGrammar`.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import Future
from typing import Any, Callable, Hashable, Iterable, Mapping, Sequence

import numpy as np

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
    if key == "pse_gbnf":
        return Grammar.from_gbnf(_text(key, value))
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


def vocabulary_of(tokenizer: Any, width: int, revision: str | None = None,
                  trust_remote_code: bool = False) -> Any:
    """The served model's vocabulary, built once per process and tokenizer name (it takes
    seconds); a tokenizer without a name gets a vocabulary of its own.

    Args:
        tokenizer: the tokenizer, or its name or directory.
        width: the model's vocabulary size (its logits' width).
        revision: the revision of a tokenizer given by name.
        trust_remote_code: whether a tokenizer given by name may run its own code.
    """
    from pse.vocabulary import Vocabulary

    name = tokenizer if isinstance(tokenizer, str) else getattr(tokenizer, "name_or_path", "")
    if not name:  # nothing to know it again by
        return Vocabulary.from_tokenizer(tokenizer, n_vocab=width)
    key = (name, revision, width)
    with _VOCABULARIES_LOCK:
        if key not in _VOCABULARIES:
            if isinstance(tokenizer, str):
                from transformers import AutoTokenizer

                tokenizer = AutoTokenizer.from_pretrained(tokenizer, revision=revision,
                                                          trust_remote_code=trust_remote_code)
            _VOCABULARIES[key] = Vocabulary.from_tokenizer(tokenizer, n_vocab=width)
        return _VOCABULARIES[key]


_VOCABULARIES: dict[tuple, Any] = {}
_VOCABULARIES_LOCK = threading.Lock()


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
        return self.compiled(*asked)

    def compiled(self, key: Hashable, build: Callable[[], StateMachine]) -> StructuringEngine:
        """A fresh engine for the structure that `build` makes, compiled on the first call
        for `key` (its content).

        Raises:
            RequestError: the structure is malformed or does not compile.
        """
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
    if asked is not None:
        check_structure(*asked)


def check_structure(key: Hashable, build: Callable[[], StateMachine]) -> None:
    """Compile the structure that `build` makes (without a vocabulary), once per `key`.

    Raises:
        RequestError: the structure is malformed or does not compile.
    """
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
        engine: the request's own engine, or a future of it (compiling off the step).
        output_ids: the request's output ids; a live list that the serving engine extends.
        failed: why the row cannot be constrained from the start (its structure did not
            compile), else None.

    Attributes:
        failed: None, or why the row can go no further (a structure that did not compile, a
            token its structure refuses, a dead end): such a row is allowed nothing but EOS.
    """

    def __init__(self, engine: StructuringEngine | Future | None, output_ids: Sequence[int],
                 failed: str | None = None) -> None:
        self.engine = engine
        self.output_ids = output_ids
        self.consumed = 0
        self.failed = failed if engine is not None else failed or "no structure"
        self.reported = False  # whether the failure was logged

    def resolve(self) -> None:
        """Wait for the row's engine where it is still compiling."""
        if isinstance(self.engine, Future):
            try:
                self.engine = self.engine.result()
            except RequestError as e:
                self.engine, self.failed = None, str(e)

    def advance(self) -> None:
        """Commit the output tokens that came since the last call."""
        self.resolve()
        ids = self.output_ids
        while self.failed is None and self.consumed < len(ids):
            if self.engine.is_finished:
                break
            token = ids[self.consumed]
            if not self.engine.consume_token(token):
                self.failed = (f"token {token} is not allowed by the structure: "
                               f"{self.engine.explain(token)}")
            self.consumed += 1


# -- the structured outputs of serving engines ----------------------------------------------------
STANDARD_KINDS = ("json", "json_object", "regex", "choice", "grammar", "structural_tag")


def standard_structure(kind: str, spec: str, whitespace: int | str = "flexible"
                       ) -> tuple[Hashable, Callable[[], StateMachine]]:
    """A serving engine's structured-output request as pse builds it: a cache key and a
    function that builds the structure.

    Args:
        kind: "json" (a JSON Schema as text), "json_object" (any JSON object; `spec` is
            ignored), "regex", "choice" (a JSON list of strings: exactly one of them),
            "grammar" (GBNF, recognised by its `::=`, as llama.cpp, SGLang's "ebnf" and
            XGrammar write it, else Lark), or "structural_tag" (XGrammar's form with "structures" and "triggers": free
            text in which every trigger opens one of its structures, `begin`, a JSON Schema,
            `end`).
        spec: the request's text.
        whitespace: between the tokens of JSON: "flexible" (bounded), "compact", or the most
            blanks.

    Raises:
        RequestError: an unknown kind (the malformed spec is refused by the builder).
    """
    if kind not in STANDARD_KINDS:
        raise RequestError(f"unknown kind of structured output {kind!r}: pse builds "
                           f"{', '.join(STANDARD_KINDS)}")
    return (kind, spec if kind != "json_object" else "", whitespace), \
        lambda: _standard(kind, spec, whitespace)


def _standard(kind: str, spec: str, whitespace: int | str) -> StateMachine:
    from pse.grammar import Grammar
    from pse.json_schema import JsonSchema
    from pse.machines import AnyOf, Phrase
    from pse.regex import Regex

    if kind == "json":
        return JsonSchema(_json(kind, spec), whitespace=whitespace)
    if kind == "json_object":
        return JsonSchema({"type": "object"}, whitespace=whitespace)
    if kind == "regex":
        return Regex(_text(kind, spec))
    if kind == "choice":
        choices = _json(kind, spec)
        if (not isinstance(choices, list) or not choices
                or not all(isinstance(c, str) and c for c in choices)):
            raise RequestError("choice must be a non-empty list of non-empty strings")
        return AnyOf(*[Phrase(c) for c in dict.fromkeys(choices)])
    if kind == "grammar":
        text = _text(kind, spec)
        return Grammar.from_gbnf(text) if "::=" in text else Grammar.from_lark(text)
    return _structural_tag(_json(kind, spec), whitespace)


def _structural_tag(tag: Any, whitespace: int | str) -> StateMachine:
    """Free text in which the trigger opens one of the structures that begin with it."""
    from pse.json_schema import JsonSchema
    from pse.machines import AnyOf, Chain, Loop, Phrase
    from pse.text import TextUntil, TextWithout

    if not isinstance(tag, dict) or not isinstance(tag.get("structures"), list) \
            or not isinstance(tag.get("triggers"), list):
        raise RequestError("structural_tag: pse reads XGrammar's form "
                           '{"structures": [{"begin", "schema", "end"}, ...], "triggers": [...]}')
    triggers = tag["triggers"]
    if len(triggers) != 1 or not isinstance(triggers[0], str) or not triggers[0]:
        raise RequestError(f"structural_tag: pse reads one trigger, got {triggers!r}")
    trigger = triggers[0]
    tags = []
    for s in tag["structures"]:
        if not isinstance(s, dict) or not {"begin", "schema", "end"} <= set(s):
            raise RequestError(f"structural_tag: a structure has begin, schema and end: {s!r}")
        if not isinstance(s["begin"], str) or not s["begin"].startswith(trigger):
            raise RequestError(f"structural_tag: {s['begin']!r} does not begin with the "
                               f"trigger {trigger!r}")
        rest = s["begin"][len(trigger):]
        tags.append(Chain(*([Phrase(rest)] if rest else []),
                          JsonSchema(s["schema"], whitespace=whitespace),
                          *([Phrase(s["end"])] if s["end"] else [])))
    if not tags:
        raise RequestError("structural_tag: no structures")
    tagged = Chain(TextUntil(trigger), AnyOf(*tags) if len(tags) > 1 else tags[0])
    return Chain(Loop(tagged, min_count=0), TextWithout(trigger))


_TOKEN, _STOP, _PAST_THE_END = 0, 1, 2


class ServedGrammar:
    """One request's engine in a serving engine: the request's stop tokens end it once the
    structure is complete (and only then), and what it accepted can be rolled back.

    Args:
        engine: the request's own engine.
        stop_ids: the token ids that end the request (its EOS and stop tokens); None: the
            vocabulary's EOS ids.
    """

    def __init__(self, engine: StructuringEngine, stop_ids: Iterable[int] | None = None
                 ) -> None:
        self.engine = engine
        eos = set(engine.vocab.eos_token_ids)
        self.stop_ids = sorted(set(stop_ids) if stop_ids else eos)
        self._not_stops = sorted(eos - set(self.stop_ids))
        self.terminated = False
        self._history: list[int] = []  # per accepted token: _TOKEN, _STOP or _PAST_THE_END

    def copy(self) -> ServedGrammar:
        """A fresh request in the same state."""
        other = ServedGrammar.__new__(ServedGrammar)
        other.engine = self.engine.copy()
        other.stop_ids, other._not_stops = self.stop_ids, self._not_stops
        other.terminated = self.terminated
        other._history = list(self._history)
        return other

    def accept(self, token: int) -> bool:
        """Commit one token; False (state unchanged) when the structure refuses it. After the
        stop token every token is taken (the serving engine ends the request)."""
        if self.terminated:
            self._history.append(_PAST_THE_END)
            return True
        if token in self.stop_ids:
            if not self.engine.is_accepting():
                return False
            self.terminated = True
            self._history.append(_STOP)
            return True
        if not self.engine.consume_token(token):
            return False
        self._history.append(_TOKEN)
        return True

    def accept_prefix(self, tokens: Sequence[int]) -> int:
        """How many of `tokens`, from the first, the structure takes (the state is kept)."""
        n = 0
        for token in tokens:
            if not self.accept(token):
                break
            n += 1
        self.rollback(n)
        return n

    def rollback(self, n: int) -> None:
        """Undo the last `n` accepted tokens.

        Raises:
            ValueError: fewer than `n` were accepted.
        """
        if n > len(self._history):
            raise ValueError(f"cannot roll back {n} tokens: {len(self._history)} accepted")
        undone = self._history[len(self._history) - n:]
        del self._history[len(self._history) - n:]
        if _STOP in undone:
            self.terminated = False
        tokens = undone.count(_TOKEN)
        if tokens:
            self.engine.rollback(tokens)

    def fix_stops(self, row: np.ndarray) -> None:
        """Set the stop tokens' bits in a filled mask row once the structure is complete (and
        clear them before), and clear the vocabulary's EOS ids that are no stop token here."""
        words = row.view(np.uint32)
        accepting = self.engine.is_accepting()
        for token in self._not_stops:
            words[token >> 5] &= ~np.uint32(1 << (token & 31))
        for token in self.stop_ids:
            if token >> 5 >= len(words):
                continue
            bit = np.uint32(1 << (token & 31))
            if accepting:
                words[token >> 5] |= bit
            else:
                words[token >> 5] &= ~bit

    def jump_forward(self) -> list[int]:
        """The tokens the structure forces next, in the tokenizer's canonical form."""
        if self.terminated:
            return []
        return self.engine.compute_ff_tokens()
