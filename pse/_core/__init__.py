"""The Cython core of pse: compiled tables, parser states and steppers."""
