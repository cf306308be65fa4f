"""Retry rules: what may be retried per method, Retry-After parsing, backoff and budget."""

from __future__ import annotations

import random

import pytest

from petsync.client.config import RetryPolicy
from petsync.client.retry import Failure, RetrySchedule, backoff_delay, may_retry, parse_retry_after
from petsync.core.errors import ApiError, OutcomeUnknownError, RetriesExhaustedError, TransportError
from tests.conftest import FakeClock

WALL = 1_445_412_480.0  # Wed, 21 Oct 2015 07:28:00 GMT


def _status(code: int, retry_after: float | None = None) -> Failure:
    error = ApiError(f"HTTP {code}", http_status=code, url="u")
    return Failure(error, sent=True, http_status=code, retry_after=retry_after)


NOT_SENT = Failure(TransportError("refused", url="u"), sent=False)
SENT = Failure(TransportError("read timeout", url="u"), sent=True)
FINAL = Failure(TransportError("unknown host", url="u"), sent=False, recoverable=False)


@pytest.mark.parametrize(
    ("method", "failure", "expected"),
    [
        ("GET", NOT_SENT, True),
        ("GET", SENT, True),
        ("GET", _status(408), True),
        ("GET", _status(429), True),
        ("GET", _status(502), True),
        ("GET", _status(503), True),
        ("GET", _status(504), True),
        ("GET", _status(500), False),
        ("GET", _status(400), False),
        ("GET", _status(401), False),
        ("GET", _status(403), False),
        ("GET", _status(404), False),
        ("GET", FINAL, False),
        ("POST", FINAL, False),
        ("POST", _status(408), False),
        ("POST", NOT_SENT, True),
        ("POST", SENT, False),
        ("POST", _status(429), True),
        ("POST", _status(500), False),
        ("POST", _status(502), False),
        ("POST", _status(503), False),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_may_retry_by_method(method: str, failure: Failure, expected: bool) -> None:
    assert may_retry(method, failure) is expected


@pytest.mark.parametrize(
    ("value", "date_header", "expected"),
    [
        ("7", None, 7.0),
        ("0", None, 0.0),
        ("Wed, 21 Oct 2015 07:28:30 GMT", "Wed, 21 Oct 2015 07:28:00 GMT", 30.0),
        ("Wed, 21 Oct 2015 07:28:45 GMT", None, 45.0),  # against the injected wall clock
        ("Wed, 21 Oct 2015 07:27:00 GMT", None, 0.0),  # a date in the past: no wait
        ("soon", None, None),
        ("-3", None, None),
        (None, None, None),
    ],
    ids=["seconds", "zero", "date-vs-Date", "date-vs-wall-clock", "past", "junk", "neg", "none"],
)
def test_parse_retry_after(value: str | None, date_header: str | None, expected: float) -> None:
    assert parse_retry_after(value, date_header=date_header, wall_clock=lambda: WALL) == expected


def test_date_header_wins_over_a_skewed_wall_clock() -> None:
    wait = parse_retry_after(
        "Wed, 21 Oct 2015 07:28:10 GMT",
        date_header="Wed, 21 Oct 2015 07:28:00 GMT",
        wall_clock=lambda: WALL + 3600,  # local clock an hour fast
    )
    assert wait == 10.0


def test_backoff_is_full_jitter_under_a_capped_exponential() -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_max=3.0)
    rng, twin = random.Random(3), random.Random(3)
    delays = [backoff_delay(policy, n, rng) for n in range(1, 7)]
    ceilings = [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]
    assert delays == [twin.uniform(0.0, c) for c in ceilings]


def test_backoff_survives_a_huge_retry_number() -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_max=3.0)
    assert 0.0 <= backoff_delay(policy, 10_000, random.Random(1)) <= 3.0


def _schedule(clock: FakeClock, method: str = "GET", **policy: float) -> RetrySchedule:
    return RetrySchedule(
        RetryPolicy(**policy),  # type: ignore[arg-type]
        method,
        "https://h/v1/pets",
        clock=clock,
        rng=random.Random(0),
    )


def test_retry_after_is_a_floor(fake_clock: FakeClock) -> None:
    schedule = _schedule(fake_clock, backoff_base=0.5)
    schedule.attempt()
    assert schedule.wait_after(_status(503, retry_after=9.0)) == 9.0


def test_a_failure_that_may_not_be_retried_raises_its_own_error(fake_clock: FakeClock) -> None:
    error = OutcomeUnknownError("lost", url="u")
    schedule = _schedule(fake_clock, "POST")
    schedule.attempt()
    with pytest.raises(OutcomeUnknownError) as caught:
        schedule.wait_after(Failure(error, sent=True))
    assert caught.value is error


def test_attempts_exhausted_message(fake_clock: FakeClock) -> None:
    schedule = _schedule(fake_clock, max_attempts=2)
    schedule.attempt()
    fake_clock.sleep(schedule.wait_after(SENT))
    schedule.attempt()
    fake_clock.now += 1.0
    with pytest.raises(RetriesExhaustedError) as caught:
        schedule.wait_after(SENT)
    assert caught.value.attempts == 2
    assert caught.value.last_error is SENT.error
    assert str(caught.value) == (
        f"gave up on GET https://h/v1/pets after 2 attempts in {caught.value.elapsed:.1f} s: "
        "last error: read timeout; to retry more, raise max_attempts= (now 1 retry), "
        "or try again later"
    )


def test_budget_exhausted_by_a_long_retry_after(fake_clock: FakeClock) -> None:
    schedule = _schedule(fake_clock, budget_seconds=60.0)
    schedule.attempt()
    with pytest.raises(RetriesExhaustedError) as caught:
        schedule.wait_after(_status(429, retry_after=120.0))
    assert str(caught.value) == (
        "gave up on GET https://h/v1/pets after 1 attempt in 0.0 s: last error: HTTP 429; "
        "the next wait of 120.0 s (the server asked for Retry-After 120 s) would pass the "
        "retry budget of 60 s; to retry longer, raise budget_seconds=, or try again later"
    )
