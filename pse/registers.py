"""Guards on a rule's register: what lets one object take its properties in any order.

Every rule invocation of a compiled structure carries a small register: 64 key bits and a
property count. A call starts the callee with an empty register and the return restores the
caller's. A `Guarded` terminal is entered only when its `Guard` holds for the register, and
entering it updates the register. A `Scope` makes a machine a rule of its own (never inlined
into its parent), so its guards see a register nobody else writes.

An object with properties in any order is then a loop over "key: value" pairs in one scope:
each known key is guarded by "my bit is clear" and sets it; the closing brace needs the bits
of the required keys. No order is ever enumerated.

An array with uniqueItems uses the register too: its guards open an item (after "[" or ","),
close it (at "," or "]", or as soon as the item's rule ends) and refuse an item equal to one
seen before; the items seen are kept with the register. An object whose key count matters
(minProperties, a requirement that some key be present) keeps the keys it has not listed so:
a key opens with its opening quote (KEY_OPEN) and closes with its closing one (KEY_CLOSE),
where a repeat is refused (JSON readers keep one value per key, so a repeated key would count
twice where the reader sees one).
"""

from __future__ import annotations

from dataclasses import dataclass

from pse.errors import GrammarError
from pse.machines import StateMachine, Terminal

KEY_BITS = 64
ITEM_CLOSE = 1  # Guard.item flags: close the open item, refusing a repeat ...
ITEM_OPEN = 2   # ... then open one after this terminal's byte
KEY_OPEN = 4    # an object's key begins with this terminal (a comma, whitespace, a quote) ...
KEY_CLOSE = 8   # ... and ends with its closing quote, this terminal's first byte


@dataclass(frozen=True)
class Guard:
    """A check of the register, then its update.

    Args:
        forbid: key bits that must be clear.
        need: key bits that must be set.
        min_props: properties that must have been counted.
        clauses: (if_bits, then_bits) pairs: when all of if_bits are set, all of then_bits
            must be too.
        set: key bits to set.
        inc: properties to add to the count.
        max_props: the count after adding, plus the bits of `reserve` still clear (keys that
            must still come), must not exceed this (None: no limit).
        reserve: see max_props.
        cap: with `inc`, the count saturates at this value, so states that no bound can
            tell apart are equal.
        item: ITEM_CLOSE and/or ITEM_OPEN, for the one-byte terminals of a unique array
            ("[" opens, "," closes and opens, "]" closes); its items must be rules of their
            own (a `Scope`), so that their ends are seen. Or KEY_OPEN or KEY_CLOSE, for the
            terminals around an object's key.
    """

    forbid: int = 0
    need: int = 0
    min_props: int = 0
    clauses: tuple[tuple[int, int], ...] = ()
    set: int = 0
    inc: int = 0
    max_props: int | None = None
    reserve: int = 0
    cap: int = 0
    item: int = 0

    def __post_init__(self) -> None:
        for name in ("forbid", "need", "set", "reserve"):
            value = getattr(self, name)
            if not 0 <= value < 1 << KEY_BITS:
                raise GrammarError(f"Guard.{name} must be a {KEY_BITS}-bit mask, got {value}")
        for a, b in self.clauses:
            if not (0 <= a < 1 << KEY_BITS and 0 <= b < 1 << KEY_BITS):
                raise GrammarError(f"Guard clause ({a}, {b}) is not a pair of "
                                   f"{KEY_BITS}-bit masks")
        if self.inc < 0 or self.min_props < 0 or self.cap < 0:
            raise GrammarError("Guard counts must be >= 0")
        if self.item not in (0, ITEM_CLOSE, ITEM_OPEN, ITEM_CLOSE | ITEM_OPEN, KEY_OPEN,
                             KEY_CLOSE):
            raise GrammarError(f"Guard.item must be a combination of ITEM_CLOSE and ITEM_OPEN, "
                               f"or KEY_OPEN or KEY_CLOSE, got {self.item}")


class Guarded(StateMachine):
    """`terminal`, entered only when `guard` holds for the register of the enclosing rule.

    Raises:
        GrammarError: `terminal` is not a terminal, or it can match the empty string (a
            guard must sit on a step that consumes bytes).
    """

    def __init__(self, terminal: Terminal, guard: Guard) -> None:
        if not isinstance(terminal, Terminal):
            raise GrammarError(f"Guarded takes a terminal, got {type(terminal).__name__}")
        if terminal.min_count == 0:
            raise GrammarError(f"Guarded: {terminal!r} can match the empty string")
        self.terminal = terminal
        self.guard = guard
        super().__init__({0: [(terminal, 1)]}, start_state=0, end_states=(1,))

    def __repr__(self) -> str:
        return f"Guarded({self.terminal!r})"


class Scope(StateMachine):
    """`machine` as a rule of its own: its guards read and write a register of their own."""

    def __init__(self, machine: StateMachine) -> None:
        self.inner = machine
        super().__init__({0: [(machine, 1)]}, start_state=0, end_states=(1,))

    def __repr__(self) -> str:
        return f"Scope({self.inner!r})"
