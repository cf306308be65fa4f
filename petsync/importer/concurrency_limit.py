"""A limit on requests in flight that gives way to a rate-limited API: halved at each 429.

The import keeps up to ``--concurrency`` POSTs in flight from one thread (libcurl's multi
interface): a real API is far away and each POST mostly waits for its round trip. Requests
in flight cost that thread nothing while they wait, and fewer wake-ups per request the more
of them end together, so the limit stays at ``--concurrency`` against a near or saturated
server too: round trips that grow with the requests in flight are the server queueing
them, which costs no one anything. (Senders that were threads each paid for their
request in CPU; a gradient rule then pulled them down to two. One thread needs no such
rule: measured on a near server, eight in flight take a third less time than two to four.)

A request refused with 429 (the client waited out its ``Retry-After`` and sent it again)
halves the limit: that is how the import slows down for a rate-limited API on top of
honouring ``Retry-After``. Each request answered without one lets it grow back by a step of
``SMOOTHING * sqrt(limit)``, as far as the maximum.

One thread (the import's sending thread) reads and adapts it; it holds no lock.
"""

from __future__ import annotations

import math

SMOOTHING = 0.2


class ConcurrencyLimit:
    """Requests allowed in flight (:attr:`permits`), adapted after each request ends.

    >>> limit = ConcurrencyLimit(8)
    >>> limit.observe(answered=False, throttled=True)
    >>> limit.permits
    4
    """

    def __init__(self, maximum: int) -> None:
        if maximum < 1:
            raise ValueError("maximum must be at least 1")
        self.maximum = maximum
        self.limit = float(maximum)
        self.lowest = float(maximum)

    @property
    def permits(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self.limit))

    def observe(self, *, answered: bool, throttled: bool) -> None:
        """Adapt the limit to one request that ended: ``throttled`` if it met a 429 (or a
        refusal) and was retried, ``answered`` if the API answered it."""
        if throttled:
            self.limit = max(1.0, self.limit / 2)
            self.lowest = min(self.lowest, self.limit)
        elif answered and self.limit < self.maximum:
            self.limit = min(float(self.maximum), self.limit + SMOOTHING * math.sqrt(self.limit))
