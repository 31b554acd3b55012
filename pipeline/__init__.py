"""listclean: clean mailing lists and verify email addresses.

The Python API (see :mod:`pipeline.api`)::

    from pipeline import clean, verify

    result = clean(frame)  # or clean("list.csv"): .frame, .rejects, .summary
    answer = verify("john.doe@gmial.com")  # the spec's fields, plus REASON
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pipeline.version import __version__

if TYPE_CHECKING:
    from pipeline.api import CleanResult, Verification, clean, verify

__all__ = ["CleanResult", "Verification", "__version__", "clean", "verify"]


def __getattr__(name: str) -> Any:
    """The Python API, imported on first use (PEP 562): ``import pipeline`` and the command
    line's start stay light."""
    if name in __all__:
        from pipeline import api

        return getattr(api, name)
    raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
