"""``listclean serve`` in a process of its own whose clock the test moves.

    python -m tests.service.instance CLOCK_FILE [serve options...]

The same command as ``listclean serve``, with one difference: the time the quota windows are
read at is the number in CLOCK_FILE (Unix seconds), read at every look, so a test can stand
several processes on the last second of a month and move them all past it at once. The test
replaces the file whole (write, then rename), so a reader never sees half of it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from pipeline.cli import _parser
from pipeline.cli.service import serve


class FileClock:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self) -> float:
        return float(self.path.read_text())


def main(argv: Sequence[str]) -> int:
    clock_file, *options = argv
    args = _parser().parse_args(["serve", *options])
    return serve(args, FileClock(Path(clock_file)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
