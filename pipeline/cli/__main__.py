"""``python -m pipeline.cli``: the same as ``listclean``."""

from pipeline.cli import command

command()
