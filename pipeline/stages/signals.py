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

A signal once the command has published its files (:func:`published`, at the commit point)
says so: every file was written, whatever the command was doing after.

Only :func:`deferred` holds a signal back: for the few renames of a run's commit point
(:mod:`pipeline.stages.write.publish`), so that a run never publishes half of its files, and
for a command's start (:func:`pipeline.cli.main`: its arguments read, its modules imported), so
that the signal is never raised inside the making of a class. A signal that arrives while the
first is being handled is noted and changes nothing: the way out is short.

Python wraps an exception raised inside some of its hooks (a descriptor's ``__set_name__``,
called as a class is made, such as a dataclass's fields) in a ``RuntimeError`` whose cause it
is; :func:`interruption` finds the signal behind such an error.
"""

from __future__ import annotations

import _signal  # signal's own core: the signal module makes its enums as it is imported
import _thread
import contextlib

# Type names only: the command line imports this module first and alone (pipeline.cli), and
# typing (like threading, and the signal module's enums) is a few milliseconds in which a
# signal would still be Python's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from types import FrameType
    from typing import Final

SIGNALS: Final = (_signal.SIGINT, _signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The command was asked to stop by a signal. Its exit code is the shell's for a command
    a signal ended: 128 + the signal's number (130 for SIGINT, 143 for SIGTERM).

    On its way out a command records what it was making (``output``), what it had published
    (``written``, and ``left`` unpublished: normally nothing, since a signal before the commit
    point publishes nothing) and the work folder it kept for a resume (``kept``).
    """

    def __init__(self, signum: int) -> None:
        super().__init__(_name(signum))
        self.signum = signum
        self.output: str | None = None
        self.written: tuple[str, ...] = ()
        self.left: tuple[str, ...] = ()
        self.kept: str | None = None

    @property
    def name(self) -> str:
        return _name(self.signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def _name(signum: int) -> str:
    import signal

    return signal.Signals(signum).name


class _Handler:
    """The process's handler while :func:`handled` is in force."""

    def __init__(self) -> None:
        self.thread = _thread.get_ident()  # the main thread's: Python sets handlers there only
        self.deferring = 0  # depth of deferred() sections
        self.pending: int | None = None  # a signal held back by deferred()
        self.raised = False
        self.published: tuple[str, ...] = ()  # what the command put in place (published())

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if self.raised:  # already on the way out
            return
        if self.deferring:
            self.pending = self.pending or signum
            return
        self.raised = True
        raise self.interrupted(signum)

    def interrupted(self, signum: int) -> Interrupted:
        stop = Interrupted(signum)
        stop.written = self.published
        return stop


_current: _Handler | None = None


@contextlib.contextmanager
def handled() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread until the block ends;
    the handlers before it are put back after. Elsewhere than in the main thread (where Python
    cannot set handlers) it changes nothing."""
    global _current
    handler = _Handler()
    try:
        before = {sig: _signal.signal(sig, handler) for sig in SIGNALS}
    except ValueError:  # not the main thread, where alone Python sets handlers
        yield
        return
    outer, _current = _current, handler
    try:
        yield
    finally:
        for sig, previous in before.items():
            _signal.signal(sig, previous)
        _current = outer


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A signal that arrives in the block waits for its end, then raises as it would have (a
    block that fails raises its own error instead)."""
    handler = _current
    if handler is None or _thread.get_ident() != handler.thread:
        yield
        return
    handler.deferring += 1
    try:
        yield
    finally:
        handler.deferring -= 1
    if not handler.deferring and handler.pending is not None and not handler.raised:
        handler.raised = True
        raise handler.interrupted(handler.pending)


def published(written: Sequence[str]) -> None:
    """The command has put *written* in place (its commit point is behind it): a signal from
    now on says every file was written, not that nothing was."""
    handler = _current
    if handler is not None and _thread.get_ident() == handler.thread:
        handler.published = tuple(written)


def interruption(exc: BaseException) -> Interrupted | None:
    """The :class:`Interrupted` that *exc* is, or that it was raised from (its cause, and its
    cause's), if any."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        if isinstance(found, Interrupted):
            return found
        seen.add(id(found))
        found = found.__cause__
    return None
