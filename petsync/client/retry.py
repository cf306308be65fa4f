"""Retrying: which failures may be retried for which method, and how long to wait.

Only what can recover is retried. A failure that the same request would meet again (a host
name that does not resolve, a TLS certificate or handshake refused, a request that cannot be
sent, a 4xx answer other than 408 and 429) fails at once (``Failure.recoverable`` is False).

GET is safe to repeat, so it retries transport errors (refused or reset connections,
timeouts, the request deadline) and the statuses that mean "try again" (408, 429, 502, 503,
504). POST /pets is not idempotent (a repeat could create the animal twice), so it retries
only a failure that surely happened before the request reached the server (the connection
was refused or timed out) or a 429, where the server says it did nothing.

Waits are exponential backoff with full jitter (uniform in ``[0, min(max, base * 2**(n-1))]``),
never shorter than the ``Retry-After`` the server sent, bounded by the attempt count and the
total time budget of :class:`~petsync.client.config.RetryPolicy`. Clock, sleep and randomness are
injected by the client; nothing here waits or reads a real clock.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from petsync.client.config import RetryPolicy
from petsync.core.errors import PetsyncError, RetriesExhaustedError
from petsync.core.settings_table import RETRIES, RETRY_BUDGET
from petsync.core.wording import Said

logger = logging.getLogger(__name__)

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD"})
GET_RETRY_STATUSES = frozenset({408, 429, 502, 503, 504})
POST_RETRY_STATUSES = frozenset({429})  # 429: the server refused before doing anything


@dataclass(frozen=True)
class Failure:
    """One failed attempt as the client saw it.

    ``error`` is what the caller gets when this failure is not retried; ``sent`` is False
    only when the request surely never reached the server (connection refused, connect
    timeout); ``http_status`` is None for a transport failure; ``retry_after`` is the
    server's ``Retry-After`` in seconds, if any; ``recoverable`` is False when trying again
    cannot help (an unknown host name, a refused TLS certificate), whatever the method.
    """

    error: PetsyncError
    sent: bool
    http_status: int | None = None
    retry_after: float | None = None
    recoverable: bool = True


def may_retry(method: str, failure: Failure) -> bool:
    """Whether ``failure`` of a ``method`` request may be retried at all (budget aside).

    >>> from petsync.core.errors import TransportError
    >>> lost = Failure(TransportError("read timeout", url="u"), sent=True)
    >>> may_retry("GET", lost), may_retry("POST", lost)
    (True, False)
    """
    if not failure.recoverable:
        return False
    if method.upper() in IDEMPOTENT_METHODS:
        return failure.http_status is None or failure.http_status in GET_RETRY_STATUSES
    if failure.http_status is None:
        return not failure.sent
    return failure.http_status in POST_RETRY_STATUSES


def parse_retry_after(
    value: str | None, *, date_header: str | None, wall_clock: Callable[[], float]
) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or an HTTP-date).

    An HTTP-date is measured against the response's own ``Date`` header when it has one
    (both come from the server's clock, so a skewed local clock does not matter), else
    against ``wall_clock`` (seconds since the epoch). A date in the past means 0; a value
    that is neither form is ignored (None).

    >>> parse_retry_after("7", date_header=None, wall_clock=lambda: 0.0)
    7.0
    >>> parse_retry_after(
    ...     "Wed, 21 Oct 2015 07:28:30 GMT",
    ...     date_header="Wed, 21 Oct 2015 07:28:00 GMT",
    ...     wall_clock=lambda: 0.0,
    ... )
    30.0
    """
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        # float, not int: a value of thousands of digits (int() refuses over 4300) is just a
        # very long wait, which the retry budget then refuses.
        return float(text)
    target = _http_date(text)
    if target is None:
        return None
    now = _http_date(date_header) if date_header else None
    if now is None:
        now = wall_clock()
    return max(0.0, target - now)


def _http_date(text: str) -> float | None:
    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def backoff_delay(policy: RetryPolicy, retry_number: int, rng: random.Random) -> float:
    """Full-jitter wait before retry ``retry_number`` (1 for the first retry)."""
    exponent = min(retry_number - 1, 62)  # 2**62 already dwarfs any backoff_max
    ceiling = min(policy.backoff_max, policy.backoff_base * math.ldexp(1.0, exponent))
    return rng.uniform(0.0, ceiling)


class RetrySchedule:
    """The retry state of one logical request: attempts so far and time since the first.

    The client calls :meth:`attempt` before each try and :meth:`wait_after` after a
    failure (``started``, the clock's reading at the first try, lets it build the schedule
    only when a first try fails); ``wait_after`` returns the seconds to sleep, or raises the
    error that ends the request (the failure's own error when it may not be retried,
    :class:`RetriesExhaustedError` when attempts or budget are spent).
    """

    def __init__(
        self,
        policy: RetryPolicy,
        method: str,
        url: str,
        *,
        clock: Callable[[], float],
        rng: random.Random,
        started: float | None = None,
    ) -> None:
        self._policy = policy
        self._method = method.upper()
        self._url = url
        self._clock = clock
        self._rng = rng
        self._start = clock() if started is None else started
        self.attempts = 0

    def attempt(self) -> None:
        self.attempts += 1

    def wait_after(self, failure: Failure) -> float:
        if not may_retry(self._method, failure):
            raise failure.error
        elapsed = self._clock() - self._start
        if self.attempts >= self._policy.max_attempts:
            raise self._exhausted(
                failure,
                elapsed,
                "to retry more, raise " + RETRIES + f" (now {_retries(self._policy.retries)})",
            )
        delay = backoff_delay(self._policy, self.attempts, self._rng)
        if failure.retry_after is not None:
            delay = max(delay, failure.retry_after)  # Retry-After is a floor, never shortened
        if elapsed + delay > self._policy.budget_seconds:
            asked = (
                f" (the server asked for Retry-After {failure.retry_after:g} s)"
                if failure.retry_after is not None and failure.retry_after >= delay
                else ""
            )
            raise self._exhausted(
                failure,
                elapsed,
                f"the next wait of {delay:.1f} s{asked} would pass the retry budget of "
                f"{self._policy.budget_seconds:g} s; to retry longer, raise " + RETRY_BUDGET,
            )
        logger.info(
            "retry",
            extra={
                "fields": {
                    "method": self._method,
                    "url": self._url,
                    "attempt": self.attempts,
                    "delay_seconds": round(delay, 3),
                    "http_status": failure.http_status,
                    "reason": failure.error.message,
                }
            },
        )
        return delay

    def _exhausted(self, failure: Failure, elapsed: float, fix: Said) -> RetriesExhaustedError:
        plural = "" if self.attempts == 1 else "s"
        return RetriesExhaustedError(
            f"gave up on {self._method} {self._url} after {self.attempts} attempt{plural} "
            f"in {elapsed:.1f} s: last error: "
            + failure.error.words
            + "; "
            + fix
            + ", or try again later",
            attempts=self.attempts,
            elapsed=elapsed,
            last_error=failure.error,
        )


def _retries(count: int) -> str:
    return f"{count} retry" if count == 1 else f"{count} retries"
