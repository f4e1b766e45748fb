def canonical_text(text: bytes) -> bytes | None:
    """The canonical form by which unique arrays compare items (for tests); None when `text`
    is not one JSON value."""
