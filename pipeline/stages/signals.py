"""How a command stops on SIGINT (Ctrl-C) and SIGTERM (a scheduler's stop): at once, wherever
it is, leaving nothing half-made.

Python runs a signal's handler in the main thread between two bytecodes. ``asyncio.run`` turns
SIGINT into a cancellation of its main task, which lands only at that task's next ``await``:
deciding and writing a list have none, so a run used to go on to its end and publish. Its
default for SIGTERM is no handler at all: the process ended where it stood, temporary files
left behind. While :func:`handled` is in force, both signals raise :class:`Interrupted` on the
spot instead (``asyncio.run`` leaves a handler other than Python's default alone, and lets a
``KeyboardInterrupt`` through its tasks), so every ``with`` and ``finally`` on the way out
removes what the run made, and the command says what was written.

Only :func:`deferred` holds a signal back, for the few renames of a run's commit point
(:mod:`pipeline.stages.write.publish`): a run never publishes half of its files. A signal that
arrives while the first is being handled is noted and changes nothing: the way out is short.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Final

SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The command was asked to stop by a signal. Its exit code is the shell's for a command
    a signal ended: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).

    On its way out a command records what it was making (``output``), what it had published
    (``written``, and ``left`` unpublished: normally nothing, since a signal before the commit
    point publishes nothing) and the work folder it kept for a resume (``kept``).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.output: str | None = None
        self.written: tuple[str, ...] = ()
        self.left: tuple[str, ...] = ()
        self.kept: str | None = None

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class _Handler:
    """The process's handler while :func:`handled` is in force."""

    def __init__(self) -> None:
        self.deferring = 0  # depth of deferred() sections
        self.pending: int | None = None  # a signal held back by deferred()
        self.raised = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.raised:  # already on the way out
            return
        if self.deferring:
            self.pending = self.pending or signum
            return
        self.raised = True
        raise Interrupted(signum)


_current: _Handler | None = None


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread until the block ends;
    the handlers before it are put back after. Elsewhere than in the main thread (where Python
    cannot set handlers) it changes nothing."""
    global _current
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {sig: signal.getsignal(sig) for sig in SIGNALS}
    outer, _current = _current, _Handler()
    for sig in SIGNALS:
        signal.signal(sig, _current)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        _current = outer


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A signal that arrives in the block waits for its end, then raises as it would have (a
    block that fails raises its own error instead)."""
    handler = _current
    if handler is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    handler.deferring += 1
    try:
        yield
    finally:
        handler.deferring -= 1
    if not handler.deferring and handler.pending is not None and not handler.raised:
        handler.raised = True
        raise Interrupted(handler.pending)
