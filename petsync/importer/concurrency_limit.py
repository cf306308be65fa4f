"""An adaptive limit on requests in flight: grow while round trips stay flat, shrink as they queue.

The import keeps up to ``--concurrency`` POSTs in flight because a real API is far away and
each POST mostly waits for its round trip. Against a near server (or a busy machine) extra
requests in flight only queue: round trips grow with their number. This limiter follows the
gradient rule of Netflix's concurrency-limits::

    limit <- 0.8 * limit + 0.2 * (limit * clamp(min_rtt / rtt, 0.25, 1) + sqrt(limit))

Flat round trips (ratio near 1) push the limit to the maximum. Round trips that grow in
proportion to the requests in flight pull it down to where ``limit = rtt_ratio * limit +
sqrt(limit)``: a few requests beyond what keeps the server busy (2 when every request in
flight only adds its own time). The gradient's floor (0.25; Netflix uses 0.5, which stops
at 4) keeps one slow round trip from cutting the limit by more than a step. A request
that was refused with 429 (the client retried it) halves the limit, which is how the import
slows down for a rate-limited API on top of honouring ``Retry-After``.

One thread (the import's sending thread) reads and adapts it; it holds no lock.
"""

from __future__ import annotations

import math

GRADIENT_FLOOR = 0.25
SMOOTHING = 0.2


class ConcurrencyLimit:
    """Requests allowed in flight (:attr:`permits`), adapted after each request ends.

    >>> limit = ConcurrencyLimit(8)
    >>> limit.observe(rtt=None, throttled=True)
    >>> limit.permits
    4
    """

    def __init__(self, maximum: int) -> None:
        if maximum < 1:
            raise ValueError("maximum must be at least 1")
        self.maximum = maximum
        self.limit = float(maximum)
        self.lowest = float(maximum)
        self.min_rtt: float | None = None

    @property
    def permits(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self.limit))

    def observe(self, *, rtt: float | None, throttled: bool) -> None:
        """Adapt the limit to one request that ended: ``rtt`` if it was answered,
        ``throttled`` if it met a 429 (or a refusal) and was retried."""
        if throttled:
            self.limit = max(1.0, self.limit / 2)
        elif rtt is not None and rtt > 0:
            self.min_rtt = rtt if self.min_rtt is None else min(self.min_rtt, rtt)
            gradient = max(GRADIENT_FLOOR, min(1.0, self.min_rtt / rtt))
            target = self.limit * gradient + math.sqrt(self.limit)
            smoothed = (1 - SMOOTHING) * self.limit + SMOOTHING * target
            self.limit = min(float(self.maximum), max(1.0, smoothed))
        self.lowest = min(self.lowest, self.limit)
