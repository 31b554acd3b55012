"""The version of listclean, one place (the wheel's, read by ``pyproject.toml``)."""

__version__ = "0.1.0"
