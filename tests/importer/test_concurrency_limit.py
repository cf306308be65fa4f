"""The adaptive limit on POSTs in flight: flat round trips keep it high, queueing lowers it."""

from __future__ import annotations

from collections.abc import Callable

from petsync.importer.concurrency_limit import ConcurrencyLimit


def settle(limit: ConcurrencyLimit, rtt_of: Callable[[int], float], rounds: int = 300) -> None:
    for _ in range(rounds):
        limit.observe(rtt=rtt_of(limit.permits), throttled=False)


def test_flat_round_trips_keep_the_maximum() -> None:
    limit = ConcurrencyLimit(8)
    settle(limit, lambda permits: 0.020)
    assert limit.permits == 8


def test_round_trips_that_grow_with_the_load_pull_it_down_to_two() -> None:
    limit = ConcurrencyLimit(8)
    settle(limit, lambda permits: 0.001, rounds=1)  # the first request, alone: 1 ms
    settle(limit, lambda permits: 0.001 * permits)  # a near server: requests only queue
    assert limit.permits == 2  # one at the server, one being prepared: like a plain loop
    assert int(limit.lowest) == 2


def test_one_slow_round_trip_cuts_the_limit_by_a_bounded_step() -> None:
    limit = ConcurrencyLimit(8)
    settle(limit, lambda permits: 0.001, rounds=1)
    limit.observe(rtt=1.0, throttled=False)  # a thousand times the fastest: a hiccup
    # The gradient is floored at 0.25: 0.8 * 8 + 0.2 * (8 * 0.25 + sqrt(8)) = 7.37
    assert round(limit.limit, 2) == 7.37


def test_429_halves_the_limit_and_it_grows_back() -> None:
    limit = ConcurrencyLimit(8)
    for expected in (4, 2, 1, 1):
        limit.observe(rtt=None, throttled=True)
        assert limit.permits == expected
    settle(limit, lambda permits: 0.020, rounds=100)
    assert limit.permits == 8


def test_unanswered_requests_do_not_move_the_limit() -> None:
    limit = ConcurrencyLimit(8)
    limit.observe(rtt=None, throttled=False)
    assert (limit.permits, limit.min_rtt) == (8, None)
