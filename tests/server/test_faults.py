"""Fault switches: the token bucket and the seeded draws behind the rates."""

from __future__ import annotations

from petsync.server.faults import Faults, TokenBucket
from tests.conftest import FakeClock


def test_bucket_allows_one_second_of_requests_then_refills_with_time(
    fake_clock: FakeClock,
) -> None:
    faults = Faults(rate_limit=3.0)
    bucket = TokenBucket(faults, fake_clock)
    assert [bucket.take() for _ in range(4)] == [None, None, None, 1]
    fake_clock.sleep(1 / 3)
    assert bucket.take() is None
    assert bucket.take() == 1


def test_bucket_holds_at_least_one_request_below_one_per_second(fake_clock: FakeClock) -> None:
    bucket = TokenBucket(Faults(rate_limit=0.25), fake_clock)
    assert bucket.take() is None
    assert bucket.take() == 4
    fake_clock.sleep(3)
    assert bucket.take() == 1
    fake_clock.sleep(1)
    assert bucket.take() is None


def test_bucket_never_stores_more_than_one_second_of_idle_time(fake_clock: FakeClock) -> None:
    bucket = TokenBucket(Faults(rate_limit=2.0), fake_clock)
    fake_clock.sleep(3600)
    assert [bucket.take() for _ in range(3)] == [None, None, 1]


def test_rate_limit_switches_off_and_on_live(fake_clock: FakeClock) -> None:
    faults = Faults(rate_limit=1.0)
    bucket = TokenBucket(faults, fake_clock)
    assert [bucket.take(), bucket.take()] == [None, 1]
    faults.rate_limit = None
    assert [bucket.take() for _ in range(5)] == [None] * 5
    faults.rate_limit = 1.0  # back on: starts full again
    assert [bucket.take(), bucket.take()] == [None, 1]


def test_rates_of_zero_and_one_are_certain_and_draw_nothing() -> None:
    faults = Faults(seed=3)
    assert not any(faults.roll(0.0) for _ in range(100))
    assert all(faults.roll(1.0) for _ in range(100))
    fresh = Faults(seed=3)
    assert [faults.roll(0.5) for _ in range(30)] == [fresh.roll(0.5) for _ in range(30)]


def test_draws_repeat_for_a_seed_and_a_live_seed_change_restarts_them() -> None:
    faults = Faults(seed=1)
    first = [faults.roll(0.5) for _ in range(30)]
    assert 5 < sum(first) < 25
    faults.seed = 2
    assert [faults.roll(0.5) for _ in range(30)] == _draws(2, 30)
    assert _draws(1, 30) == first != _draws(2, 30)


def _draws(seed: int, n: int) -> list[bool]:
    faults = Faults(seed=seed)
    return [faults.roll(0.5) for _ in range(n)]
