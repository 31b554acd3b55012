"""How long work reports how far it got: a meter per stage, made by whoever runs the engine.

The engine and its steps only count (:meth:`Progress.update`); the front decides what a count
looks like: a tqdm bar on a terminal, a periodic line in a log, or nothing at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class Progress(Protocol):
    """A progress meter (tqdm has this shape)."""

    def update(self, n: float | None = 1) -> bool | None: ...
    def close(self) -> None: ...


# (total or None when unknown, label, unit) -> a meter: ProgressFactory(5000, "SMTP", "address")
ProgressFactory = Callable[[int | None, str, str], Progress]


class _Silent:
    def update(self, n: float | None = 1) -> bool | None:
        return None

    def close(self) -> None:
        return None


def meter(factory: ProgressFactory | None, total: int | None, label: str, unit: str) -> Progress:
    """A meter from *factory*, or one that shows nothing when there is no factory."""
    return factory(total, label, unit) if factory is not None else _Silent()
