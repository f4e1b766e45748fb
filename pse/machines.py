"""The combinators users compose structures from.

A `StateMachine` is a state graph `{state: [(sub_machine, target_state), ...]}` with a start
state and end states. Terminals (`Phrase`, `Character`, `Whitespace`) match bytes themselves;
`Chain`, `AnyOf`, `Loop`, `Optional` and `Forward` arrange other machines. A machine compiles
once (on first use) into tables run by the Cython core.
"""

from __future__ import annotations

import bisect
import functools
from _sre import unicode_tolower  # (re's own simple case mapping)
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterable, Sequence, Union

from pse import automaton, counted_lengths
from pse._core.unicode_tables import lowered
from pse.errors import GrammarError, PSEError

if TYPE_CHECKING:
    from pse._core.stepper import Stepper, StepperDelta
    from pse._core.structure import CompiledStructure
    from pse.vocabulary import Vocabulary

State = Hashable
Edge = tuple["StateMachine", State]
CharsetSpec = Union[str, Sequence[tuple[Union[str, int], Union[str, int]]]]


# What compiles a machine into core tables: pse.compiler, which registers itself here when it
# is imported (`import pse` imports it). Machines describe structures; the compiler reads
# them; imports go one way, from the compiler to the machines (see tests/test_imports.py).
_compile_machine: Callable[[StateMachine], CompiledStructure] | None = None


def use_compiler(compile_machine: Callable[[StateMachine], CompiledStructure]) -> None:
    """Make `compile_machine` what StateMachine.compile() calls (pse.compiler does)."""
    global _compile_machine
    _compile_machine = compile_machine


class StateMachine:
    """A structure built from sub-machines.

    Args:
        state_graph: `{state: [(sub_machine, target_state), ...]}`; following an edge means
            matching the sub-machine, then being in the target state.
        start_state: where matching begins.
        end_states: states in which the machine may stop.

    Raises:
        GrammarError: an edge does not hold a StateMachine.
    """

    # a name for explanations (`StructuringEngine.explain`): where the parser is inside this
    # machine, they name it (a grammar labels each rule's machine "rule <name>")
    label = ""

    def __init__(
        self,
        state_graph: dict[State, list[Edge]] | None = None,
        start_state: State = 0,
        end_states: Iterable[State] = ("$",),
    ) -> None:
        graph: dict[State, list[Edge]] = dict(state_graph or {})
        for state, edges in graph.items():
            for edge in edges:
                if (not isinstance(edge, tuple) or len(edge) != 2
                        or not isinstance(edge[0], StateMachine)):
                    raise GrammarError(
                        f"state_graph[{state!r}]: edges must be (StateMachine, target_state) "
                        f"pairs, got {edge!r}")
        _set_graph(self, graph, start_state, tuple(end_states))

    # -- composition sugar --------------------------------------------------------------------
    def __add__(self, other: StateMachine) -> Chain:
        return Chain(self, _machine(other, "right operand of +"))

    def __radd__(self, other: StateMachine) -> Chain:
        return Chain(_machine(other, "left operand of +"), self)

    def __or__(self, other: StateMachine) -> AnyOf:
        return AnyOf(self, _machine(other, "right operand of |"))

    def __ror__(self, other: StateMachine) -> AnyOf:
        return AnyOf(_machine(other, "left operand of |"), self)

    # -- running ------------------------------------------------------------------------------
    def compile(self) -> CompiledStructure:
        """Compile into core tables once; later calls return the same object.

        Raises:
            GrammarError: the structure is malformed or matches nothing.
        """
        if self._compiled is None:
            if _compile_machine is None:
                raise RuntimeError("no compiler: import pse (pse.compiler registers itself "
                                   "with pse.machines.use_compiler)")
            self._compiled = _compile_machine(self)
        return self._compiled

    def __getstate__(self) -> dict:
        """What pickle and `copy.deepcopy` keep: all but the compiled structure (core tables,
        which do not pickle); the copy compiles again when first used (or loads from the
        compile cache)."""
        state = self.__dict__.copy()
        state["_compiled"] = None
        return state

    def cache_key(self) -> str | None:
        """A canonical description of the structure, for the compile cache (`pse.compile_cache`):
        equal descriptions must compile to equal tables. None (the default, and what every
        combinator returns): the structure has none and is not cached.

        `JsonSchema`, `Grammar`, `Regex` and `Json` have one. A subclass of those is not
        cached unless it defines its own.
        """
        return None

    def _cache_extra(self) -> dict:
        """What a compile cache entry keeps beside the tables (JSON data): a schema's
        warnings, a grammar's imported files."""
        return {}

    def _cache_valid(self, extra: dict) -> bool:
        """Whether an entry whose `_cache_extra` was `extra` still applies (a grammar's
        imported files unchanged)."""
        return True

    def to_dot(self, max_machines: int = 50) -> str:
        """A picture of the machine as Graphviz DOT text (see pse.drawing.to_dot): a cluster
        of states per machine, an edge per sub-machine."""
        from pse.drawing import to_dot

        return to_dot(self, max_machines)

    def _repr_svg_(self) -> str | None:
        """The picture in a notebook, where Graphviz's `dot` is installed and draws it (else
        None: the notebook shows the repr)."""
        from pse.drawing import render, to_dot

        try:
            return render(to_dot(self)).decode()
        except PSEError:
            return None

    def get_steppers(self) -> list[Stepper]:
        """The steppers at the start of the structure (nothing consumed yet)."""
        from pse._core.stepper import start_steppers

        return start_steppers(self.compile())

    @staticmethod
    def advance_all(steppers: Sequence[Stepper], token: str | bytes,
                    vocab: Vocabulary | None = None) -> list[StepperDelta]:
        """Advance every stepper by `token`, healing tokens that overshoot.

        Args:
            steppers: the live steppers.
            token: the token to consume (str or bytes).
            vocab: the vocabulary for token healing. When a stepper consumes only a prefix of
                the token, the longest vocabulary token that is a prefix of what it consumed
                replaces the token (`was_healed=True`; the stepper holds exactly that token's
                bytes); when no vocabulary token fits, that path gives no delta. Without a
                vocabulary nothing is healed and such deltas keep their `remaining_input`.

        Returns:
            Unhealed deltas (the whole token consumed) and healed ones, in stepper order.
        """
        deltas: list[StepperDelta] = []
        for stepper in steppers:
            for delta in stepper.consume(token):
                if vocab is None or not delta.stepper.remaining_input:
                    deltas.append(delta)
                else:
                    deltas.extend(_heal(stepper, delta.token, vocab))
        return deltas

    def matches(self, text: str | bytes, partial: bool = False) -> bool:
        """True when the whole `text` is accepted (partial=True: when it is a valid prefix).

        A special token (SpecialToken) is written in `text` as `pse.special_text` marks it,
        as `StructuringEngine.structured_outputs` writes it: `special_text("[TOOL_CALLS]")`
        (a SpecialToken given by its text; one given by id matches no marked text).

        Raises:
            TypeError: `text` is not a str or bytes.
            ValueError: a special token's mark is not closed.
        """
        from pse._core.stepper import consume_special, consume_tokens

        if not isinstance(text, (str, bytes)):
            raise TypeError(f"matches takes the text as a str or bytes, not "
                            f"{type(text).__name__}")

        if not (isinstance(text, str) and SPECIAL_MARK in text):
            live = consume_tokens(self.get_steppers(), [text])
        else:
            parts = text.split(SPECIAL_MARK)  # text, special token, text, ...
            if len(parts) % 2 == 0:
                raise ValueError("a special token's mark is not closed (see special_text)")
            live = self.get_steppers()
            for k, part in enumerate(parts):
                if k % 2:
                    live = consume_special(live, part)
                elif part:
                    live = consume_tokens(live, [part])
        if partial:
            return bool(live)
        return any(s.has_reached_accept_state() for s in live)

    def parse_value(self, text: str) -> Any:
        """Turn a complete match into a value; `Stepper.get_current_value` uses it."""
        return text

    def value_parser(self) -> Callable[[str], Any]:
        """`parse_value` as a function the compiled structure can keep: one that does not
        hold the machine (which holds the compiled structure) where the class's
        `parse_value` needs no state."""
        if type(self).parse_value is StateMachine.parse_value:
            return _text_value
        return self.parse_value

    def structured_outputs(self, text: str, complete: bool) -> list[tuple[str, Any]]:
        """The structured parts of `text` (a prefix of a match) completed so far, in order,
        as (name, value) pairs; `StructuringEngine.structured_outputs` uses it.

        JSON parts (`JsonSchema`, `Json`, tool calls) have values; free text has none, and
        nor do other combinators: compose parts with the machines of `pse.text` and
        `pse.tools`, which find them in the text.

        Args:
            text: what was generated so far (special tokens as their text).
            complete: whether `text` is a whole match.
        """
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _text_value(text: str) -> str:
    return text


def _heal(stepper: Stepper, consumed: bytes, vocab: Vocabulary) -> list[StepperDelta]:
    from pse._core.stepper import StepperDelta

    found = vocab.longest_prefix(consumed)
    if found is None:
        return []
    canonical = found[0]
    return [StepperDelta(d.stepper, canonical, True) for d in stepper.consume(canonical)
            if not d.stepper.remaining_input]


def _set_graph(machine: StateMachine, graph: dict[State, list[Edge]], start_state: State,
               end_states: tuple) -> None:
    """What StateMachine.__init__ sets, for a graph whose edges are known to be (machine,
    target) pairs: the combinators build theirs from machines they checked (a JSON Schema
    compile makes some fifty of them)."""
    machine.state_graph = graph
    machine.start_state = start_state
    machine.end_states = end_states
    machine._compiled = None


def _machine(obj: Any, where: str) -> StateMachine:
    if isinstance(obj, StateMachine):
        return obj
    if isinstance(obj, str):
        return Phrase(obj)
    raise GrammarError(f"{where}: expected a StateMachine or a str, got {type(obj).__name__}")


def _machines(objs: tuple, kind: str) -> list[StateMachine]:
    """The arguments of a Chain or AnyOf as machines (a str as its Phrase); the argument's
    place is spelled out only for an error."""
    out = list(objs)
    for i, obj in enumerate(out):
        if not isinstance(obj, StateMachine):
            out[i] = _machine(obj, f"{kind} argument {i}")
    return out


def _count(value: Any, name: str, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise GrammarError(f"{name} must be an int, got {value!r}")
    if value < 0:
        raise GrammarError(f"{name} must be >= 0, got {value}")
    return value


class Terminal(StateMachine):
    """A machine that matches bytes itself with a byte automaton.

    Subclasses provide `unit_dfa()`. A plain terminal (`repeats_unit` False) matches its
    DFA once; a repeating one matches its unit `min_count` to `max_count` times (None:
    unbounded), counted at run time rather than unrolled, so the unit must be prefix-free
    (one character, say).
    """

    repeats_unit: bool = False
    min_count: int = 1
    max_count: int | None = 1

    def unit_dfa(self) -> automaton.DFA:
        raise NotImplementedError

    def terminal_key(self) -> Hashable:
        """Equal keys mean equal terminals; the compiler shares them."""
        raise NotImplementedError


class DfaTerminal(Terminal):
    """A terminal given by a ready byte DFA (built by the schema or grammar compiler).

    Args:
        dfa: the automaton (state 0 the start; trimmed).
        name: shown in errors and reprs.
        key: equal keys mean equal automata, which the compiler and the mask caches share
            (default: the automaton's own content).
        states: what the mask cache may share between the automaton's states and other
            automata's (`json_spelling.KeyStates`: key names), or None.
    """

    def __init__(self, dfa: automaton.DFA, name: str, key: Hashable | None = None,
                 states: Any = None) -> None:
        _set_graph(self, {}, 0, ("$",))
        self._dfa, self.name, self._key, self.states = dfa, name, key, states
        if dfa.accept[0]:
            self.min_count = 0  # the compiler adds the empty path itself

    def unit_dfa(self) -> automaton.DFA:
        return self._dfa

    def terminal_key(self) -> Hashable:
        if self._key is None:
            self._key = self._dfa.key()
        return self._key

    def __repr__(self) -> str:
        return f"DfaTerminal({self.name})"


# The most steps a counted terminal counts (the core keeps counts in 32-bit ints)
MAX_STEPS = 2**31 - 2


class CountedTerminal(DfaTerminal):
    """A DFA terminal whose matches take `min_steps` to `max_steps` counted steps (edges into
    a state of `counted`), counted at run time rather than unrolled into the automaton: a
    string's characters past a long maxLength (`CharCountedTerminal`), or the iterations of a
    pattern's long repeat (`regex.compile_counted_regex`).

    Args:
        dfa: the automaton (state 0 the start; trimmed).
        counted: per state, whether entering it takes one counted step.
        min_steps, max_steps: the bounds (max None: unbounded), at most MAX_STEPS.
        name: shown in errors and reprs.

    Raises:
        GrammarError: bad bounds or flags, or step counts the run-time check cannot
            tabulate (see counted_lengths.count_lengths).
    """

    counts_steps = True

    def __init__(self, dfa: automaton.DFA, counted: Sequence[bool], min_steps: int,
                 max_steps: int | None, name: str) -> None:
        super().__init__(dfa, name)
        self.counted = tuple(bool(b) for b in counted)
        if len(self.counted) != dfa.n_states:
            raise GrammarError(f"{name}: one counted flag per state")
        self.min_steps = _count(min_steps, "min_steps")
        self.max_steps = _count(max_steps, "max_steps", allow_none=True)
        if self.max_steps is not None and self.min_steps > self.max_steps:
            raise GrammarError(f"min_steps ({min_steps}) > max_steps ({max_steps})")
        if max(self.min_steps, self.max_steps or 0) > MAX_STEPS:
            raise GrammarError(f"{name}: counts past {MAX_STEPS:,} steps (MAX_STEPS)")
        # the empty match is the compiler's epsilon edge: only when no step is needed
        self.min_count = 0 if dfa.accept[0] and self.min_steps == 0 else 1
        self.length_bits, self.length_tail = counted_lengths.count_lengths(dfa, self.counted)

    def matches_some_length(self) -> bool:
        """Whether some match takes min_steps to max_steps counted steps (else the terminal
        matches nothing)."""
        hi = self.max_steps
        for n in range(self.min_steps, min(63, 63 if hi is None else hi) + 1):
            if self.length_bits[0] >> n & 1:
                return True
        # the table's tail: every length from LENGTH_BITS on, or none of them
        return self.length_tail[0] and (hi is None
                                        or hi >= max(self.min_steps, counted_lengths.LENGTH_BITS))

    def terminal_key(self) -> Hashable:
        return ("counted", super().terminal_key(), self.counted)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name}, {self.min_steps}, {self.max_steps})"


class CharCountedTerminal(CountedTerminal):
    """A DFA terminal whose matches hold `min_chars` to `max_chars` characters, counted at
    run time rather than unrolled into the automaton (a pattern beside a long maxLength).

    Args:
        dfa: the automaton (state 0 the start; trimmed).
        boundaries: per state, whether it sits between two characters (the start does;
            entering such a state completes one).
        min_chars, max_chars: the bounds (max None: unbounded).
        name: shown in errors and reprs.

    Raises:
        GrammarError: bad bounds or boundaries, or lengths the run-time check cannot
            tabulate (see counted_lengths.count_lengths).
    """

    def __init__(self, dfa: automaton.DFA, boundaries: Sequence[bool], min_chars: int,
                 max_chars: int | None, name: str) -> None:
        if len(boundaries) != dfa.n_states or not boundaries[0]:
            raise GrammarError(f"{name}: one boundary flag per state, the start's set")
        _count(min_chars, "min_chars")  # (checked here to be named as the caller knows them)
        _count(max_chars, "max_chars", allow_none=True)
        super().__init__(dfa, boundaries, min_chars, max_chars, name)

    @property
    def boundaries(self) -> tuple[bool, ...]:
        """Per state, whether it sits between two characters."""
        return self.counted

    @property
    def min_chars(self) -> int:
        """The fewest characters of a match."""
        return self.min_steps

    @property
    def max_chars(self) -> int | None:
        """The most characters of a match (None: unbounded)."""
        return self.max_steps


class Phrase(Terminal):
    """Exactly the string `text`."""

    def __init__(self, text: str | bytes) -> None:
        _set_graph(self, {}, 0, ("$",))
        if isinstance(text, str):
            self.data = text.encode("utf-8")
        elif isinstance(text, bytes):
            self.data = text
        else:
            raise GrammarError(f"Phrase text must be str or bytes, got {type(text).__name__}")
        self.text = self.data.decode("utf-8", errors="replace")
        if not self.data:
            self.min_count = self.max_count = 0

    def unit_dfa(self) -> automaton.DFA:
        return automaton.literal_dfa(self.data)

    def terminal_key(self) -> Hashable:
        return ("phrase", self.data)

    def __repr__(self) -> str:
        return f"Phrase({self.text!r})"


# In the text that `StructuringEngine.structured_outputs` parses, a committed special token is
# its text between two of these: a lone surrogate, which no decoded text holds, so the same
# text spelled out of ordinary tokens (free text may hold "[TOOL_CALLS]") is never taken for it.
SPECIAL_MARK = "\ud800"


def special_text(text: str) -> str:
    """A special token's text as `StructuringEngine.structured_outputs` writes it and
    `StateMachine.matches` reads it: between two lone surrogates (SPECIAL_MARK), which no
    decoded text holds, so the same text spelled out is never taken for the token."""
    return SPECIAL_MARK + text + SPECIAL_MARK


class SpecialToken(Terminal):
    """Exactly one vocabulary token, given by its id or by its text: for tokens that have no
    spelled-out form (`<|python_tag|>`, `[TOOL_CALLS]`, `<|im_end|>`, which tokenizers mark
    special), or to allow one token and not the same text spelled out of smaller ones.

    The structure is compiled without a vocabulary; the engine resolves the token when it is
    configured (`Vocabulary.special_token_id`). A special token is no text: free text never
    contains one, and a structure allows it only where a `SpecialToken` names it. Steppers
    consuming text never take it; the engine's masks and `consume_token` do, and
    `StateMachine.matches` where `special_text` marks it in the text (a token given by its
    text: one given by id has no text to mark there).

    Args:
        token: the token id, or its text.
        required: when False, a vocabulary without the token is no error: the token is then
            never allowed (for a token that may be left out, as Llama's `<|python_tag|>`).

    Raises:
        GrammarError: `token` is not an id (int >= 0) or a non-empty str.
    """

    def __init__(self, token: int | str, required: bool = True) -> None:
        super().__init__()
        if isinstance(token, bool) or not isinstance(token, (int, str)):
            raise GrammarError(f"SpecialToken takes a token id or its text, got {token!r}")
        if isinstance(token, int) and token < 0:
            raise GrammarError(f"a token id is >= 0, got {token}")
        if isinstance(token, str) and not token:
            raise GrammarError("SpecialToken text must not be empty")
        self.special_token = (token, bool(required))

    def unit_dfa(self) -> automaton.DFA:
        # one step the core never takes on a text byte (the compiler clears its first bytes)
        return automaton.literal_dfa(b"\xff")

    def terminal_key(self) -> Hashable:
        return ("special", self.special_token)

    def __repr__(self) -> str:
        token, required = self.special_token
        return f"SpecialToken({token!r}{'' if required else ', required=False'})"


class Character(Terminal):
    """A run of `min_length` to `max_length` characters from a class.

    Args:
        charset: the characters, as a string ("abc") or a list of (first, last) ranges of
            characters or code points ([("a", "z"), ("0", "9")]).
        min_length: fewest characters (default 1).
        max_length: most characters (None: unbounded).
        negated: match every character *not* in the class.
        case_sensitive: when False, each letter also matches its other cases.

    Raises:
        GrammarError: bad counts (negative, min > max) or a malformed or empty class.
    """

    repeats_unit = True

    def __init__(self, charset: CharsetSpec, min_length: int = 1, max_length: int | None = None,
                 negated: bool = False, case_sensitive: bool = True) -> None:
        _set_graph(self, {}, 0, ("$",))
        self.min_count = _count(min_length, "min_length")
        self.max_count = _count(max_length, "max_length", allow_none=True)
        if self.max_count is not None and self.min_count > self.max_count:
            raise GrammarError(f"min_length ({min_length}) > max_length ({max_length})")
        ranges = _parse_charset(charset)
        if not case_sensitive:
            ranges = _add_case_variants(ranges)
        self.ranges = automaton.complement(ranges) if negated else automaton.normalize_ranges(ranges)
        if not self.ranges:
            raise GrammarError(f"charset matches no character: {charset!r}"
                               + (" (negated)" if negated else ""))
        self.charset, self.negated, self.case_sensitive = charset, negated, case_sensitive

    def unit_dfa(self) -> automaton.DFA:
        nfa = automaton.NFA()
        return automaton.determinize(nfa, automaton.char_class(nfa, self.ranges))

    def terminal_key(self) -> Hashable:
        return ("chars", tuple(self.ranges))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.charset!r}, min_length={self.min_count}, "
                f"max_length={self.max_count}, negated={self.negated})")


def _parse_charset(charset: CharsetSpec) -> list[tuple[int, int]]:
    if isinstance(charset, str):
        return [(ord(ch), ord(ch)) for ch in charset]
    try:
        items = list(charset)
    except TypeError:
        raise GrammarError(f"charset must be a str or a list of ranges, got {charset!r}") from None
    ranges = []
    for item in items:
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise GrammarError(f"charset range must be a (first, last) pair, got {item!r}")
        lo, hi = (_code_point(x) for x in item)
        if lo > hi:
            raise GrammarError(f"charset range {item!r}: first > last")
        ranges.append((lo, hi))
    return ranges


def _code_point(x: str | int) -> int:
    if isinstance(x, str) and len(x) == 1:
        return ord(x)
    if isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= automaton.MAX_CODE_POINT:
        return x
    raise GrammarError(f"charset bound must be one character or a code point, got {x!r}")


def _add_case_variants(ranges: list[tuple[int, int]], ascii_only: bool = False,
                       extras: bool = True) -> list[tuple[int, int]]:
    """`ranges` with every other case of their characters, as Python's `re` folds case under
    IGNORECASE: a character matches those with the same simple lowercase and (`extras`; re
    leaves them out for categories such as \\w) those its few extra equivalences list
    (`re._casefix`: the Kelvin sign, dotless i, final sigma, long s ...); with ASCII, only
    ASCII letters fold."""
    extra = []
    if ascii_only:
        for lo, hi in ranges:
            for cp in range(max(lo, 0x41), min(hi, 0x7A) + 1):
                if 0x41 <= cp <= 0x5A or 0x61 <= cp <= 0x7A:
                    extra.append((cp ^ 0x20, cp ^ 0x20))
        return ranges + extra
    lowered_from, equivalent, cased = _case_tables()
    for lo, hi in ranges:  # (the others' only case is themselves: \w holds 133,548)
        for cp in cased[bisect.bisect_left(cased, lo):bisect.bisect_right(cased, hi)]:
            low = unicode_tolower(cp)
            for folded in (low, *equivalent.get(low, ())) if extras else (low,):
                extra.append((folded, folded))
                extra.extend((x, x) for x in lowered_from.get(folded, ()))
    return ranges + extra


# Python's re folds case by each code point's simple lowercase; every cased character lies
# below this (Unicode 15's last: Adlam, U+1E943)
_CASED_END = 0x1E950


@functools.lru_cache(maxsize=1)
def _case_tables() -> tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]], list[int]]:
    """Per simple lowercase, the code points that lower to it; re's extra equivalences (by
    lowercase); and, sorted, every code point these two name: the only ones with another
    case. Built once."""
    lowered_from: dict[int, list[int]] = {}
    for cp, low in lowered(_CASED_END):
        lowered_from.setdefault(low, []).append(cp)
    try:
        from re._casefix import _EXTRA_CASES as equivalent  # Python 3.11+
    except ImportError:  # Python 3.10
        from sre_compile import _ignorecase_fixes as equivalent  # type: ignore
    cased = set(lowered_from) | set(equivalent)
    for others in (*lowered_from.values(), *equivalent.values()):
        cased.update(others)
    return ({k: tuple(v) for k, v in lowered_from.items()}, dict(equivalent), sorted(cased))


class Whitespace(Character):
    """A run of `min_length` to `max_length` blanks (space, tab, newline, carriage return)."""

    def __init__(self, min_length: int = 0, max_length: int | None = 20) -> None:
        super().__init__(" \t\n\r", min_length=min_length, max_length=max_length)

    def __repr__(self) -> str:
        return f"Whitespace(min_length={self.min_count}, max_length={self.max_count})"


class Chain(StateMachine):
    """The machines one after the other."""

    def __init__(self, *machines: StateMachine) -> None:
        self.machines = _machines(machines, "Chain")
        _set_graph(self, {i: [(m, i + 1)] for i, m in enumerate(self.machines)}, 0,
                   (len(self.machines),))

    def __repr__(self) -> str:
        return f"Chain({', '.join(map(repr, self.machines))})"


class AnyOf(StateMachine):
    """Any one of the machines; all alternatives are explored in parallel.

    Raises:
        GrammarError: no machine given.
    """

    def __init__(self, *machines: StateMachine) -> None:
        if not machines:
            raise GrammarError("AnyOf needs at least one machine (machines is empty)")
        self.machines = _machines(machines, "AnyOf")
        _set_graph(self, {0: [(m, "$") for m in self.machines]}, 0, ("$",))

    def __repr__(self) -> str:
        return f"AnyOf({', '.join(map(repr, self.machines))})"


class Optional(StateMachine):
    """The machine, or nothing."""

    def __init__(self, machine: StateMachine) -> None:
        self.machine = _machine(machine, "Optional argument")
        _set_graph(self, {0: [(self.machine, "$")]}, 0, (0, "$"))

    def __repr__(self) -> str:
        return f"Optional({self.machine!r})"


class Loop(StateMachine):
    """The machine repeated `min_count` to `max_count` times, with an optional separator.

    Args:
        machine: what repeats.
        min_count: fewest repetitions (default 0).
        max_count: most repetitions (None: unbounded).
        separator: a machine matched between two repetitions.

    Raises:
        GrammarError: bad counts (negative, min > max).
    """

    def __init__(self, machine: StateMachine, min_count: int = 0, max_count: int | None = None,
                 separator: StateMachine | None = None) -> None:
        self.machine = _machine(machine, "Loop machine")
        self.min_count = _count(min_count, "min_count")
        self.max_count = _count(max_count, "max_count", allow_none=True)
        if self.max_count is not None and self.min_count > self.max_count:
            raise GrammarError(f"min_count ({min_count}) > max_count ({max_count})")
        self.separator = None if separator is None else _machine(separator, "Loop separator")
        run = self._as_character_run()
        if run is not None:
            super().__init__({0: [(run, "$")]}, start_state=0, end_states=("$",))
            return
        # state k: k repetitions done; ("sep", k): separator after the k-th matched
        top = self.max_count if self.max_count is not None else max(self.min_count, 1)
        graph: dict[State, list[Edge]] = {}
        for k in range(top):
            _add_repetition(graph, k, k + 1, self.machine, self.separator)
        if self.max_count is None:
            _add_repetition(graph, top, top, self.machine, self.separator)
        super().__init__(graph, start_state=0, end_states=range(self.min_count, top + 1))

    def _as_character_run(self) -> Character | None:
        """An unbounded loop of a character run that may be a single character is itself a
        single run; compiling it so keeps one live state instead of one per split point."""
        body, optional = self.machine, False
        if isinstance(body, Optional):
            body, optional = body.machine, True
        if (self.separator is not None or self.max_count is not None
                or type(body) not in (Character, Whitespace) or body.min_count > 1
                or body.max_count == 0):  # a run of nothing: the loop matches only ""
            return None
        least = 0 if optional or body.min_count == 0 else self.min_count
        return Character(body.ranges, min_length=least, max_length=None)

    def __repr__(self) -> str:
        sep = f", separator={self.separator!r}" if self.separator is not None else ""
        return f"Loop({self.machine!r}, {self.min_count}, {self.max_count}{sep})"


def _add_repetition(graph: dict, k: int, nxt: int, machine: StateMachine,
                    separator: StateMachine | None) -> None:
    if separator is None or k == 0:
        graph.setdefault(k, []).append((machine, nxt))
    else:
        graph.setdefault(k, []).append((separator, ("sep", k)))
        graph.setdefault(("sep", k), []).append((machine, nxt))


class Forward(StateMachine):
    """A placeholder for a machine defined later, for recursive structures.

        value = Forward()
        value.set(AnyOf(Phrase("x"), Chain(Phrase("["), value, Phrase("]"))))

    Raises:
        GrammarError: compiling while unset, or setting twice.
    """

    def __init__(self, machine: StateMachine | None = None, name: str = "Forward") -> None:
        super().__init__()
        self.name = name
        self.target: StateMachine | None = None
        if machine is not None:
            self.set(machine)

    def set(self, machine: StateMachine) -> Forward:
        """Define the machine this Forward stands for; returns self."""
        if self.target is not None:
            raise GrammarError(f"{self.name} is already set")
        self.target = _machine(machine, f"{self.name}.set argument")
        return self

    def __repr__(self) -> str:
        return f"Forward(name={self.name!r})"
