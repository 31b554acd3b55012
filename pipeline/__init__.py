"""listclean: clean mailing lists and verify email addresses.

The Python API (see :mod:`pipeline.api`)::

    from pipeline import clean, verify

    result = clean(frame)  # or clean("list.csv"): .frame, .rejects, .summary
    answer = verify("john.doe@gmial.com")  # the spec's fields, plus REASON
"""

__version__ = "0.1.0"

from pipeline.api import CleanResult, Verification, clean, verify

__all__ = ["CleanResult", "Verification", "__version__", "clean", "verify"]
