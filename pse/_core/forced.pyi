from pse._core.mask import Matcher

def forced_bytes(matcher: Matcher, max_bytes: int) -> bytes: ...

class Boundary:
    """The live states after some bytes, to ask whether a token can span their end."""

    data: bytes
    def __init__(self, matcher: Matcher, data: bytes) -> None: ...
    def spanned_from(self, start: int) -> bool: ...
