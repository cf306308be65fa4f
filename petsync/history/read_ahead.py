"""Pieces read ahead on a thread of their own, a bounded few at a time.

The night's pets and the open versions are both decoded from Parquet (and the night put in
id order) by pyarrow and numpy, which release the GIL: read on threads of their own while
the fold compares the pieces before them, they use the machine's second core. At most
``depth`` pieces wait, so memory stays a few pieces.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

DEPTH = 2  # pieces read ahead and waiting


@contextlib.contextmanager
def read_ahead(source: Iterable[T], name: str, depth: int = DEPTH) -> Iterator[Iterator[T]]:
    """``source``'s items, produced on a thread named ``name`` up to ``depth`` ahead.

    An exception the source raises is raised where the item would have been taken. When
    the block ends, early or not, the thread stops after the item it is producing and is
    joined: nothing reads on once the block is left.

    >>> with read_ahead(iter(range(3)), "numbers") as items:
    ...     list(items)
    [0, 1, 2]
    """
    waiting: queue.Queue[tuple[bool, object]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in source:
                waiting.put((True, item))
                if stop.is_set():
                    return
            waiting.put((False, None))
        except BaseException as exc:  # handed to the consumer, raised there
            waiting.put((False, exc))
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def consume() -> Iterator[T]:
        while True:
            more, value = waiting.get()
            if more:
                yield value  # type: ignore[misc]
                continue
            if isinstance(value, BaseException):
                raise value
            return

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    try:
        yield consume()
    finally:
        stop.set()
        while thread.is_alive():  # let a producer blocked on a full queue put and see stop
            with contextlib.suppress(queue.Empty):
                waiting.get(timeout=0.05)
        thread.join()
