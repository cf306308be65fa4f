"""The run's request slots: who gets a slot when a request ends.

Each page read ahead here is a stand-in job that records when it starts and then waits for
the test to let it end (an event, bounded), so the tests decide the order in which requests
end and never wait on the clock.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest

from petsync.client.read_ahead import RequestSlots

GATE_SECONDS = 10.0  # a bound on a wait that ends at once; reached only if broken


class Jobs:
    """Stand-in pages: ``work(name)`` records ``name`` when it starts, ends on ``end(name)``."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self._lock = threading.Lock()
        self._ends: dict[str, threading.Event] = {}
        self._starts: dict[str, threading.Event] = {}

    def _event(self, events: dict[str, threading.Event], name: str) -> threading.Event:
        with self._lock:
            return events.setdefault(name, threading.Event())

    def work(self, name: str) -> Any:
        def run() -> Any:
            with self._lock:
                self.started.append(name)
            self._event(self._starts, name).set()
            assert self._event(self._ends, name).wait(GATE_SECONDS), f"{name} never ended"
            return name

        return run

    def end(self, name: str, *, then: str | None = None) -> None:
        """Let ``name`` end; with ``then``, wait until that job has started."""
        self._event(self._ends, name).set()
        if then is not None:
            self.wait_started(then)

    def wait_started(self, name: str) -> None:
        assert self._event(self._starts, name).wait(GATE_SECONDS), f"{name} never started"


class Seen:
    """A condition that also says when a thread has begun to wait on it."""

    def __init__(self, condition: threading.Condition) -> None:
        self._condition = condition
        self.waited = threading.Event()

    def wait(self) -> bool:
        self.waited.set()
        return self._condition.wait()

    def notify(self) -> None:
        self._condition.notify()


def _asked(slots: RequestSlots, jobs: Jobs, name: str, owner: object) -> Future[Any]:
    future = slots.ask(jobs.work(name), owner)
    assert future is not None
    return future


def test_a_slot_passes_to_the_next_page_without_its_listing_coming_back() -> None:
    jobs, listing = Jobs(), object()
    with RequestSlots(1, window=4) as slots:
        first = _asked(slots, jobs, "p1", listing)
        second = _asked(slots, jobs, "p2", listing)
        jobs.wait_started("p1")
        assert jobs.started == ["p1"]  # p2 waits for the one slot
        jobs.end("p1", then="p2")  # nobody read p1's answer: its slot went on to p2
        jobs.end("p2")
        assert (first.result(GATE_SECONDS), second.result(GATE_SECONDS)) == ("p1", "p2")
    assert jobs.started == ["p1", "p2"]


def test_the_listing_with_fewest_pages_in_flight_sends_next() -> None:
    jobs, sweep, sold = Jobs(), object(), object()
    with RequestSlots(2, window=4) as slots:
        futures = [_asked(slots, jobs, name, sweep) for name in ("a1", "a2", "a3")]
        futures.append(_asked(slots, jobs, "s1", sold))
        jobs.end("a1", then="s1")  # the sweep still has a2 in flight, sold none
        jobs.end("a2", then="a3")
        for name in ("s1", "a3"):
            jobs.end(name)
        assert [f.result(GATE_SECONDS) for f in futures] == ["a1", "a2", "a3", "s1"]
    assert (sorted(jobs.started[:2]), jobs.started[2:]) == (["a1", "a2"], ["s1", "a3"])


def test_a_page_its_listing_waits_for_is_sent_before_other_pages() -> None:
    jobs, sweep, sold = Jobs(), object(), object()
    with RequestSlots(1, window=4) as slots:
        futures = [_asked(slots, jobs, name, sweep) for name in ("a1", "a2", "a3")]
        futures.append(_asked(slots, jobs, "s1", sold))
        slots.hurry(futures[2], sweep)  # the sweep's loop waits for a3 (a2 was dropped)
        jobs.end("a1", then="a3")
        for name in ("a3", "s1", "a2"):
            jobs.end(name)
        assert [f.result(GATE_SECONDS) for f in futures] == ["a1", "a2", "a3", "s1"]
    assert jobs.started[:2] == ["a1", "a3"]


def test_a_listings_own_request_takes_the_next_slot_before_pages_read_ahead() -> None:
    jobs, listing = Jobs(), object()
    order: list[str] = []
    with RequestSlots(1, window=4) as slots:
        first = _asked(slots, jobs, "p1", listing)
        queued = _asked(slots, jobs, "p2", listing)

        def own_request() -> None:
            with slots.held():
                order.append(f"own, after {len(jobs.started)} started")

        seen = Seen(slots._freed)
        slots._freed = seen  # type: ignore[assignment]
        jobs.wait_started("p1")
        thread = threading.Thread(target=own_request)
        thread.start()
        assert seen.waited.wait(GATE_SECONDS)  # the own request waits for the one slot
        jobs.end("p1", then="p2")  # the slot went to the own request, then on to p2
        thread.join(GATE_SECONDS)
        jobs.end("p2")
        assert (first.result(GATE_SECONDS), queued.result(GATE_SECONDS)) == ("p1", "p2")
    assert order == ["own, after 1 started"]


def test_throttling_cancels_the_pages_still_queued_and_keeps_those_in_flight() -> None:
    jobs, listing = Jobs(), object()
    with RequestSlots(1, window=4) as slots:
        sent = _asked(slots, jobs, "p1", listing)
        queued = _asked(slots, jobs, "p2", listing)
        slots.throttle()
        assert queued.cancelled() and slots.ask(jobs.work("p3"), listing) is None
        jobs.end("p1")
        assert sent.result(GATE_SECONDS) == "p1"
    assert jobs.started == ["p1"]


@pytest.mark.parametrize(("slots", "window"), [(1, 1), (2, 4), (8, 16), (32, 16)])
def test_a_listing_reads_twice_its_share_of_slots_ahead_within_the_bound(
    slots: int, window: int
) -> None:
    with RequestSlots(slots) as run_slots:
        assert run_slots.window == window


def test_closing_sends_nothing_more_and_waits_for_the_requests_in_flight() -> None:
    jobs, listing = Jobs(), object()
    slots = RequestSlots(1, window=4)
    sent = _asked(slots, jobs, "p1", listing)
    queued = _asked(slots, jobs, "p2", listing)
    dropped = threading.Event()
    queued.add_done_callback(lambda future: dropped.set())
    jobs.wait_started("p1")
    closing = threading.Thread(target=slots.close)
    closing.start()
    assert dropped.wait(GATE_SECONDS) and queued.cancelled()
    assert not sent.done() and closing.is_alive()  # p1 is still in flight: close waits
    jobs.end("p1")
    closing.join(GATE_SECONDS)
    assert not closing.is_alive() and sent.result(0) == "p1" and jobs.started == ["p1"]
