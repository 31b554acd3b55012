"""listclean: clean mailing lists and verify email addresses."""

__version__ = "0.1.0"
