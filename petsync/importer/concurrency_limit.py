"""An adaptive limit on requests in flight: grow while round trips stay flat, shrink as they queue.

The import sends with up to ``--concurrency`` threads because a real API is far away and
each POST mostly waits for its round trip. Against a near server (or a busy machine) extra
requests in flight only queue: round trips grow with their number, and the threads cost
CPU for nothing. This limiter follows the gradient rule of Netflix's concurrency-limits::

    limit <- 0.8 * limit + 0.2 * (limit * clamp(min_rtt / rtt, 0.25, 1) + sqrt(limit))

Flat round trips (ratio near 1) push the limit to the maximum. Round trips that grow in
proportion to the requests in flight (a saturated server, or client and server sharing a
small machine) pull it down to 2, where ``limit = 1 + sqrt(limit)``: one request at the
server while the next is prepared, which is as fast as it gets there. The gradient's floor
(0.25; Netflix uses 0.5, which stops at 4) keeps one slow round trip from cutting the limit
by more than a step. A request
that was refused with 429 (the client retried it) halves the limit, which is how the import
slows down for a rate-limited API on top of honouring ``Retry-After``.
"""

from __future__ import annotations

import math
import threading

GRADIENT_FLOOR = 0.25
SMOOTHING = 0.2


class ConcurrencyLimit:
    """Permits for requests in flight, their number adapted after each request.

    >>> limit = ConcurrencyLimit(8)
    >>> limit.acquire(threading.Event()), limit.in_flight
    (True, 1)
    >>> limit.release(rtt=0.02, throttled=False)
    """

    def __init__(self, maximum: int) -> None:
        if maximum < 1:
            raise ValueError("maximum must be at least 1")
        self.maximum = maximum
        self.limit = float(maximum)
        self.lowest = float(maximum)
        self.in_flight = 0
        self.min_rtt: float | None = None
        self._cond = threading.Condition(threading.Lock())

    @property
    def permits(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self.limit))

    def acquire(self, stopped: threading.Event) -> bool:
        """Wait for a permit; False (and no permit) when ``stopped`` is set meanwhile."""
        with self._cond:
            while self.in_flight >= self.permits:
                if stopped.is_set():
                    return False
                self._cond.wait(timeout=0.1)
            self.in_flight += 1
            return True

    def release(self, *, rtt: float | None = None, throttled: bool = False) -> None:
        """Return a permit, after :meth:`observe` of its last request if ``rtt``/``throttled``."""
        with self._cond:
            if rtt is not None or throttled:
                self._observe_locked(rtt, throttled)
            self.in_flight -= 1
            # Wake only as many waiters as there are free permits (not all eight threads).
            free = self.permits - self.in_flight
            if free > 0:
                self._cond.notify(free)

    def observe(self, *, rtt: float | None, throttled: bool) -> None:
        """Adapt the limit to one request: ``rtt`` if it was answered, ``throttled`` on a 429.

        A holder may send several requests under one permit, one after another (the import
        does, a batch at a time) and report each here.
        """
        with self._cond:
            self._observe_locked(rtt, throttled)
            free = self.permits - self.in_flight
            if free > 0:
                self._cond.notify(free)

    def _observe_locked(self, rtt: float | None, throttled: bool) -> None:
        if throttled:
            self.limit = max(1.0, self.limit / 2)
        elif rtt is not None and rtt > 0:
            self.min_rtt = rtt if self.min_rtt is None else min(self.min_rtt, rtt)
            gradient = max(GRADIENT_FLOOR, min(1.0, self.min_rtt / rtt))
            target = self.limit * gradient + math.sqrt(self.limit)
            smoothed = (1 - SMOOTHING) * self.limit + SMOOTHING * target
            self.limit = min(float(self.maximum), max(1.0, smoothed))
        self.lowest = min(self.lowest, self.limit)
