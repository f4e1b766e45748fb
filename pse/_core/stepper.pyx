# cython: boundscheck=False, wraparound=False
"""Steppers: immutable positions in a compiled structure, and the deltas consuming makes."""

from libc.stdint cimport int32_t, uint32_t

from pse._core.structure cimport (
    CompiledStructure, Ctx, PState, StateSet, is_accepting, next_bytes, stateset_add,
    stateset_clear, stateset_free, stateset_init, step_bytes, step_state, take_special,
)


cdef bytes as_bytes(object token):
    if isinstance(token, bytes):
        return <bytes>token
    if isinstance(token, str):
        return (<str>token).encode("utf-8")
    if isinstance(token, (bytearray, memoryview)):
        return bytes(token)
    raise TypeError(f"a token must be str or bytes, not {type(token).__name__}")


cdef bytes join_history(object history):
    chunks = []
    while history is not None:
        chunks.append(history[1])
        history = history[0]
    chunks.reverse()
    return b"".join(chunks)


cdef class Stepper:
    """A position in a structure: what has been consumed and what may come next.

    Steppers are immutable values: `consume` returns new steppers and leaves this one as it was.
    Copying is O(1). Get the start steppers from `StateMachine.get_steppers()`.
    """

    @staticmethod
    cdef Stepper make(CompiledStructure structure, PState state, object history,
                      bytes remaining):
        cdef Stepper s = Stepper.__new__(Stepper)
        s.structure = structure
        s.state = state
        s.history = history
        s.remaining_input = remaining
        return s

    def __init__(self):
        raise TypeError("steppers come from StateMachine.get_steppers()")

    def consume(self, token) -> list:
        """Advance by `token` (str or bytes).

        Returns:
            One StepperDelta per way (parse) the token can be consumed: fully, or — when a
            parse cannot go on after a non-empty prefix of the token — that longest prefix,
            the rest left in the new stepper's `remaining_input`. An empty list when not even
            the first byte fits; an empty token gives one delta holding this same stepper.
        Raises:
            TypeError: `token` is neither str nor bytes.
        """
        cdef bytes data = as_bytes(token)
        cdef const unsigned char* p = data
        cdef Py_ssize_t i, n = len(data)
        cdef int32_t k
        cdef Ctx c
        cdef StateSet cur, nxt, swap
        deltas = []
        if n == 0:
            return [StepperDelta(self, b"", False)]
        self.structure.ctx(&c)
        if self.structure.t.has_unique:
            before = join_history(self.history)
            text = before + data
            c.text = text
            c.pos = len(before)
        stateset_init(&cur, 4)
        stateset_init(&nxt, 4)
        try:
            stateset_add(&cur, &self.state)
            for i in range(n):
                stateset_clear(&nxt)
                for k in range(cur.n):
                    # a path that cannot go on keeps what it consumed (token healing's input)
                    if step_state(&c, &cur.items[k], p[i], &nxt) == 0 and i > 0:
                        deltas.append(self._delta(cur.items[k], data[:i], data[i:]))
                c.pos += 1
                swap = cur
                cur = nxt
                nxt = swap
                if cur.n == 0:
                    break
            for k in range(cur.n):
                deltas.append(self._delta(cur.items[k], data, b""))
        finally:
            stateset_free(&cur)
            stateset_free(&nxt)
        return deltas

    cdef StepperDelta _delta(self, PState state, bytes consumed, bytes remaining):
        cdef Stepper s = Stepper.make(self.structure, state, (self.history, consumed), remaining)
        return StepperDelta(s, consumed, False)

    def has_reached_accept_state(self) -> bool:
        """True when what was consumed is a complete match of the structure."""
        cdef Ctx c
        self.structure.ctx(&c)
        return is_accepting(&c, &self.state)

    def can_accept_more_input(self) -> bool:
        """True when at least one more byte can be consumed."""
        cdef Ctx c
        cdef uint32_t words[8]
        self.structure.ctx(&c)
        next_bytes(&c, &self.state, words)
        return any(words[k] for k in range(8))

    def next_bytes(self) -> bytes:
        """The byte values that can be consumed next, in increasing order."""
        cdef Ctx c
        cdef uint32_t words[8]
        self.structure.ctx(&c)
        next_bytes(&c, &self.state, words)
        return bytes(b for b in range(256) if (words[b >> 5] >> (b & 31)) & 1)

    @property
    def consumed(self) -> bytes:
        """Every byte consumed since the start steppers."""
        return join_history(self.history)

    def get_current_value(self):
        """The text matched so far; parsed by the machine (a JSON value gives the Python value)
        once the stepper is in an accept state. Incomplete UTF-8 at the end is replaced."""
        text = join_history(self.history).decode("utf-8", errors="replace")
        if self.has_reached_accept_state():
            return self.structure.parse_value(text)
        return text

    def state_key(self) -> tuple:
        """The parser state as a tuple of ints: equal keys accept exactly the same futures."""
        return (self.state.frame, self.state.node, self.state.term, self.state.dstate,
                self.state.count, self.state.props, self.state.keys, self.state.seen,
                self.state.item)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        text = join_history(self.history)
        if len(text) > 40:
            text = b"..." + text[len(text) - 37:]
        extra = f" remaining={self.remaining_input!r}" if self.remaining_input else ""
        return f"<Stepper consumed={text!r}{extra}>"


cdef class StepperDelta:
    """The result of consuming a token: the new stepper and the exact bytes it took.

    Attributes:
        stepper: the stepper after the token.
        token: the exact bytes consumed (for a healed delta, the canonical vocabulary token).
        was_healed: True when the token was replaced by a canonical vocabulary token.
    """

    def __init__(self, Stepper stepper, bytes token, bint was_healed=False):
        self.stepper = stepper
        self.token = token
        self.was_healed = was_healed

    @property
    def text(self) -> str:
        """The consumed bytes decoded as UTF-8 (an incomplete character is replaced)."""
        return self.token.decode("utf-8", errors="replace")

    @staticmethod
    def choose_best_path(deltas):
        """Pick the token to commit among `deltas` (from `StateMachine.advance_all`).

        Candidate tokens rank: unhealed before healed, then a token with a stepper in an
        accept state, then the longer token.

        Returns:
            (token, steppers): the chosen token's bytes and every stepper that reached it
            (all live parses for that token are kept), or None when `deltas` is empty.
        """
        groups = {}
        for d in deltas:
            groups.setdefault(((<StepperDelta>d).token, (<StepperDelta>d).was_healed), []).append(d)
        if not groups:
            return None

        def rank(key):
            token, healed = key
            accepting = any(d.stepper.has_reached_accept_state() for d in groups[key])
            return (not healed, accepting, len(token))

        best = max(groups, key=rank)
        return best[0], [d.stepper for d in groups[best]]

    def __repr__(self):
        healed = " healed" if self.was_healed else ""
        return f"<StepperDelta token={self.token!r}{healed} {self.stepper!r}>"


def start_steppers(CompiledStructure structure) -> list:
    """The start stepper of a compiled structure, as a one-element list."""
    return [Stepper.make(structure, structure.initial_state(), None, b"")]


def consume_tokens(list steppers, tokens) -> list:
    """Advance `steppers` over `tokens` (each str or bytes), all in C.

    Every token must be consumed whole; identical live states are merged after every byte.

    Returns:
        The live steppers after the last token: an empty list when some token did not fit.
    """
    cdef Stepper first, s
    cdef CompiledStructure structure
    cdef Ctx c
    cdef StateSet cur, nxt
    cdef bytes data
    cdef const unsigned char* p
    cdef Py_ssize_t i
    if not steppers:
        return []
    first = steppers[0]
    structure = first.structure
    structure.ctx(&c)
    tokens = [as_bytes(token) for token in tokens]
    if structure.t.has_unique:
        before = join_history(first.history)
        text = before + b"".join(tokens)
        c.text = text
        c.pos = len(before)
    stateset_init(&cur, 8)
    stateset_init(&nxt, 8)
    chunks = []
    try:
        for s in steppers:
            if s.structure is not structure:
                raise ValueError("steppers of different structures cannot be advanced together")
            stateset_add(&cur, &s.state)
        for data in tokens:
            chunks.append(data)
            p = data
            if step_bytes(&c, &cur, &nxt, p, len(data)) == 0:
                return []
        history = (first.history, b"".join(chunks))
        return [Stepper.make(structure, cur.items[i], history, b"") for i in range(cur.n)]
    finally:
        stateset_free(&cur)
        stateset_free(&nxt)


def consume_special(list steppers, object token) -> list:
    """Advance `steppers` over one special token: `token` as a SpecialToken names it (its
    text or id), taken by the terminals that name it, never spelled out of bytes. Identical
    states after it are merged.

    Returns:
        The live steppers after it: an empty list when none can take it.
    """
    cdef Stepper first, s
    cdef CompiledStructure structure
    cdef Ctx c
    cdef StateSet nxt
    cdef int32_t i, term
    cdef bytes text
    if not steppers:
        return []
    first = steppers[0]
    structure = first.structure
    terms = [t for t, (named, _) in structure.special_tokens.items() if named == token]
    structure.ctx(&c)
    if structure.t.has_unique:
        text = join_history(first.history)
        c.text = text
        c.pos = len(text)
    stateset_init(&nxt, 4)
    try:
        for s in steppers:
            if s.structure is not structure:
                raise ValueError("steppers of different structures cannot be advanced together")
            for term in terms:
                take_special(&c, &s.state, term, &nxt)
        # (a special token adds no bytes to the text, as the engine commits it)
        history = (first.history, b"")
        return [Stepper.make(structure, nxt.items[i], history, b"") for i in range(nxt.n)]
    finally:
        stateset_free(&nxt)
