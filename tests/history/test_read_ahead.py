"""read_ahead: items in order from a thread of their own, errors where they belong, no leak."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from petsync.history.read_ahead import read_ahead


def test_items_come_in_order_from_another_thread() -> None:
    threads: list[str] = []

    def source() -> Iterator[int]:
        for n in range(10):
            threads.append(threading.current_thread().name)
            yield n

    with read_ahead(source(), "numbers", depth=2) as items:
        assert list(items) == list(range(10))
    assert set(threads) == {"numbers"}


def test_the_sources_error_is_raised_where_its_item_would_be_taken() -> None:
    def source() -> Iterator[int]:
        yield 1
        raise ValueError("the third batch is damaged")

    with read_ahead(source(), "failing") as items:
        assert next(items) == 1
        with pytest.raises(ValueError, match="the third batch is damaged"):
            next(items)


def test_leaving_early_stops_the_thread_and_closes_the_source() -> None:
    closed = threading.Event()
    produced: list[int] = []

    def source() -> Iterator[int]:
        try:
            for n in range(1_000_000):
                produced.append(n)
                yield n
        finally:
            closed.set()

    with read_ahead(source(), "endless", depth=2) as items:
        assert next(items) == 0

    assert closed.is_set()
    assert not any(t.name == "endless" for t in threading.enumerate())
    assert len(produced) <= 5  # the depth, the item in hand, the one being made
