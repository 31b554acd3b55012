"""listclean: clean mailing lists and verify email addresses.

The Python API (see :mod:`pipeline.api`)::

    from pipeline import clean, verify, verify_many

    result = clean(frame)  # polars, pandas, Arrow, a path, addresses: .frame, .rejects, .summary
    answer = verify("john.doe@gmial.com")  # the spec's fields, plus REASON
    answers = verify_many(addresses)  # one engine, each distinct domain once
"""

from __future__ import annotations

from pipeline.version import __version__

# Not typing's: the command line's first imports stay as few as can be (pipeline.cli).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from pipeline.api import CleanResult, Verification, clean, verify, verify_many

__all__ = ["CleanResult", "Verification", "__version__", "clean", "verify", "verify_many"]


def __getattr__(name: str) -> Any:
    """The Python API, imported on first use (PEP 562): ``import pipeline`` and the command
    line's start stay light."""
    if name in __all__:
        from pipeline import api

        return getattr(api, name)
    raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
