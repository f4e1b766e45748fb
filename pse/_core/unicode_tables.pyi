def lowered(end: int) -> list[tuple[int, int]]:
    """(code point, its simple lowercase) for each code point below `end` whose simple
    lowercase is another, in order."""

def category_ranges(name: str) -> tuple[tuple[int, int], ...]:
    """The code point ranges of `re`'s Unicode "digit", "space" or "word"."""
