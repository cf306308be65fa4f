"""The limit on POSTs in flight: the maximum, halved at each 429, grown back while answered."""

from __future__ import annotations

from petsync.importer.concurrency_limit import ConcurrencyLimit


def answered(limit: ConcurrencyLimit, requests: int) -> None:
    for _ in range(requests):
        limit.observe(answered=True, throttled=False)


def test_answered_requests_keep_the_maximum() -> None:
    limit = ConcurrencyLimit(8)
    answered(limit, 300)
    assert (limit.permits, limit.lowest) == (8, 8)


def test_429_halves_the_limit_and_it_grows_back() -> None:
    limit = ConcurrencyLimit(8)
    for expected in (4, 2, 1, 1):
        limit.observe(answered=False, throttled=True)
        assert limit.permits == expected
    assert limit.lowest == 1
    answered(limit, 10)
    assert 1 < limit.permits < 8  # a step at a time, not at once
    answered(limit, 100)
    assert limit.permits == 8


def test_unanswered_requests_do_not_move_the_limit() -> None:
    limit = ConcurrencyLimit(8)
    limit.observe(answered=False, throttled=True)
    limit.observe(answered=False, throttled=False)  # a timeout, a refusal not retried
    assert limit.permits == 4


def test_a_limit_of_one_stays_one() -> None:
    limit = ConcurrencyLimit(1)
    limit.observe(answered=False, throttled=True)
    answered(limit, 10)
    assert (limit.permits, limit.lowest) == (1, 1)
