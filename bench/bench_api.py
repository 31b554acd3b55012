"""How fast the Python API answers from a notebook, and how fast the command line starts.

    python bench/bench_api.py [--calls 200] [--starts 15]

Measured in one run, each figure a median:
- ``verify()`` offline (no DNS): the first call of the process (the lists are loaded), then
  ``--calls`` further calls, each on another address; beside it python-email-validator's
  syntax-only ``validate_email`` on the same addresses, the baseline a notebook user knows;
- ``verify_many()`` offline over ``--calls`` addresses, per address (when the API has it);
- ``listclean --help`` and ``listclean --version`` as fresh processes (``python -m pipeline``,
  the console script's work), ``--starts`` times each, with ``python -c pass`` as the floor every
  Python command pays.

Prints a Markdown table; nothing is written. An earlier commit measures the same way from a
copy of its tree: ``git archive OLD | tar -x -C /tmp/old`` then
``PYTHONPATH=/tmp/old python bench/bench_api.py`` (``pipeline`` is imported from there).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
LISTCLEAN = [sys.executable, "-m", "pipeline"]


def _addresses(count: int) -> list[str]:
    domains = ("gmial.com", "example.org", "yahoo.co.uk", "mailinator.com", "bücher.de")
    return [f"person.{i}@{domains[i % len(domains)]}" for i in range(count)]


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _verify_figures(calls: int, cache: Path) -> dict[str, float]:
    from email_validator import EmailNotValidError, validate_email

    import pipeline

    values = _addresses(calls + 1)
    first = _timed(lambda: pipeline.verify(values[0], offline=True, cache_dir=cache))
    each = [_timed(lambda v=v: pipeline.verify(v, offline=True, cache_dir=cache)) for v in values]

    def baseline(value: str) -> None:
        with contextlib.suppress(EmailNotValidError):
            validate_email(value, check_deliverability=False)

    figures = {
        "verify(): first call": first,
        "verify(): each further call": statistics.median(each[1:]),
        "email-validator validate_email(): each call": statistics.median(
            [_timed(lambda v=v: baseline(v)) for v in values]
        ),
    }
    many = getattr(pipeline, "verify_many", None)
    if many is not None:
        whole = _timed(lambda: many(values, offline=True, cache_dir=cache))
        figures[f"verify_many() over {len(values)}: per address"] = whole / len(values)
    return figures


def _start_figures(starts: int, elsewhere: Path) -> dict[str, float]:
    """Each command started *starts* times in *elsewhere*: ``python -m`` puts the working
    folder first on the path, which must not be a checkout."""
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "listclean --help": [*LISTCLEAN, "--help"],
        "listclean --version": [*LISTCLEAN, "--version"],
    }
    figures = {}
    for name, command in commands.items():
        subprocess.run(command, capture_output=True, check=True, cwd=elsewhere)  # warm the cache
        runs = [
            _timed(
                lambda c=command: subprocess.run(c, capture_output=True, check=True, cwd=elsewhere)
            )
            for _ in range(starts)
        ]
        figures[name] = statistics.median(runs)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--starts", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-api-") as folder:
        figures = _verify_figures(args.calls, Path(folder))
        figures |= _start_figures(args.starts, Path(folder))
    print("| what | median ms |\n|---|---:|")
    for name, seconds in figures.items():
        print(f"| {name} | {seconds * 1000:.3f} |")


if __name__ == "__main__":
    main()
