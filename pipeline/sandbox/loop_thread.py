"""The lifecycle shared by the sandbox servers: an asyncio event loop of their own in a thread.

The test suite and ``listclean clean --sandbox`` run the sandbox DNS and SMTP servers beside
synchronous code (which cannot await anything) and beside other event loops (the pipeline's own,
which ``asyncio.run`` starts and ends stage by stage, and the tests'), so a server cannot borrow
the caller's loop: each one starts a new loop in a daemon thread, binds its sockets there and,
on :meth:`LoopThreadServer.stop`, closes them there and ends the thread.

:class:`LoopThreadServer` owns that start/stop lifecycle; a subclass says what to bind
(:meth:`~LoopThreadServer._bind`) and how to close it (:meth:`~LoopThreadServer._close`).
"""

from __future__ import annotations

import asyncio
import threading
from abc import ABC, abstractmethod
from types import TracebackType
from typing import ClassVar, Generic, Protocol, Self, TypeVar

__all__ = ["LoopThreadServer", "Running"]


class Running(Protocol):
    """What a server's :meth:`~LoopThreadServer._bind` returns: all that exists while it runs."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    @property
    def thread(self) -> threading.Thread: ...

    @property
    def port(self) -> int: ...


R = TypeVar("R", bound=Running)


class LoopThreadServer(ABC, Generic[R]):
    """Servers running on their own asyncio event loop in a daemon thread.

    :meth:`start` binds them and :meth:`stop` closes them; both are thread-safe, and the
    server is a context manager that does the two. ``_thread_name`` names the loop's thread.
    """

    _thread_name: ClassVar[str]

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: R | None = None
        self._port: int | None = None

    def start(self) -> None:
        """Start serving; return once the sockets are bound."""
        with self._lock:
            if self._running is not None:
                raise RuntimeError(f"{type(self).__name__} is already running")
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name=self._thread_name, daemon=True)
            thread.start()
            try:
                self._running = asyncio.run_coroutine_threadsafe(
                    self._bind(loop, thread), loop
                ).result()
            except BaseException:
                _stop_loop(loop, thread)
                raise
            self._port = self._running.port

    def stop(self) -> None:
        """Close the sockets and open sessions and end the thread; calling it again does nothing."""
        with self._lock:
            running, self._running = self._running, None
            if running is None:
                return
            asyncio.run_coroutine_threadsafe(self._close(running), running.loop).result()
            _stop_loop(running.loop, running.thread)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port bound; raises RuntimeError before :meth:`start`."""
        if self._port is None:
            raise RuntimeError(f"{type(self).__name__} has not been started")
        return self._port

    @abstractmethod
    async def _bind(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> R:
        """Bind the servers on ``loop`` (running in ``thread``); raise if that fails."""

    @abstractmethod
    async def _close(self, running: R) -> None:
        """Close everything :meth:`_bind` opened, on the server's loop."""


def _stop_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()
