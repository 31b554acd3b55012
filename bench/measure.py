"""Run one command in this process and report its wall time and peak memory as JSON.

    python bench/measure.py RESULT.json clean ...        # a `listclean` command line
    python bench/measure.py RESULT.json --email-validator LIST.csv

Reports this process's CPU time (user and system, every thread's: a measure of the work done
that other processes on a busy machine sway less than its wall time), its peak RSS and that
of its largest child process, if any (the worker
processes of ``--engine dask``'s LocalCluster, once they have exited), and the bytes this
process read and wrote through system calls (``rchar``/``wchar`` of ``/proc/self/io``: files
and sockets alike, so a Dask driver's network bytes are in them).

The second form is the baseline: python-email-validator's syntax-only check over every address
of the list's ``email`` column, one call per row, as a plain Python loop would do it.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path


def email_validator_loop(path: str) -> int:
    import polars as pl
    from email_validator import EmailNotValidError, validate_email

    emails = pl.read_csv(path, columns=["email"], infer_schema=False)["email"].fill_null("")
    valid = 0
    for email in emails:
        try:
            validate_email(email, check_deliverability=False)
            valid += 1
        except EmailNotValidError:
            pass
    return 0 if valid else 1


def io() -> dict[str, int]:
    """Bytes read and written by this process so far (Linux; empty elsewhere)."""
    try:
        fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    except OSError:
        return {}
    return {"read_bytes": int(fields["rchar"]), "written_bytes": int(fields["wchar"])}


def main() -> None:
    result, args = Path(sys.argv[1]), sys.argv[2:]
    started = time.perf_counter()
    if args[0] == "--email-validator":
        code = email_validator_loop(args[1])
    else:
        from pipeline.cli import main as listclean

        code = listclean(args)
    seconds = time.perf_counter() - started
    own = resource.getrusage(resource.RUSAGE_SELF)
    peak_kib = own.ru_maxrss
    # The largest child process waited for (a LocalCluster's workers; 0 when there were none).
    child_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    measured = {
        "exit": code,
        "seconds": seconds,
        "cpu_seconds": own.ru_utime + own.ru_stime,  # every thread's: less swayed by other load
        "peak_rss_mib": peak_kib / 1024,
        **io(),
    }
    result.write_text(json.dumps({**measured, "child_peak_rss_mib": child_kib / 1024}))


if __name__ == "__main__":
    main()
