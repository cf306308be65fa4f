"""The shape every run lock shares: ``acquire``, ``release`` and the ``with`` around them.

The export's directory lock (a ``flock``), its object-store lock (a conditional create) and
the unlocked store's probe differ in how they take and give back the lock; entering a
``with`` takes it and leaving gives it back, whatever happened inside, written once here.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Lock:
    """A lock taken by :meth:`acquire` and given back by :meth:`release` (both overridden)."""

    def acquire(self) -> None:
        raise NotImplementedError

    def release(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
