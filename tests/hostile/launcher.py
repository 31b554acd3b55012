"""Start the real command with a fault from outside its code, at a point chosen exactly:

    python launcher.py --file-size-limit BYTES -- clean ...   # writes past BYTES fail (EFBIG)
    python launcher.py --kill-at-rename -- clean ...          # SIGKILL just before a .tmp file
                                                              # is renamed onto its final name

Python ignores SIGXFSZ, so a write past RLIMIT_FSIZE fails with EFBIG, as one on a full disk
fails with ENOSPC. The kill uses the ``os.rename`` audit event (raised by ``os.replace`` too,
PEP 578): the temporary file is complete, its final name not yet taken. Then the command itself
runs unchanged, as ``python -m pipeline`` would run it.
"""

from __future__ import annotations

import os
import resource
import runpy
import signal
import sys


def _kill_at_rename(event: str, args: tuple[object, ...]) -> None:
    if event == "os.rename" and str(args[0]).endswith(".tmp"):
        os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> None:
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    if "--file-size-limit" in options:
        size = int(options[options.index("--file-size-limit") + 1])
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    if "--kill-at-rename" in options:
        sys.addaudithook(_kill_at_rename)
    sys.argv = ["listclean", *command]
    runpy.run_module("pipeline", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
