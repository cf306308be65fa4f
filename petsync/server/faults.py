"""Fault injection for the reference server: failures, rate limits and latency on demand.

A :class:`Faults` object is read on every request, so a test (or a long-running demo) can
switch faults on and off while the server runs::

    srv.faults.fail_rate = 1.0    # every request now answers 503
    srv.faults.fail_rate = 0.0    # and now none does

The rates draw from a private RNG seeded with ``seed``, so a run is reproducible.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from petsync.server.extra_fields import extra_fields as demo_extra_fields


@dataclass
class Faults:
    """What the server should get wrong, read per request.

    ``fail_rate``: fraction of requests answered 503 before any work.
    ``rate_limit``: requests per second allowed (a token bucket on the server's clock holding
    at most one second of requests, and at least one); beyond it, 429 with ``Retry-After``.
    ``latency_ms``: added to every request (a real asyncio sleep; for benchmarks and demos).
    ``fail_after_store_rate``: fraction of createPet calls that store the pet, then answer
    500 (so clients meet a POST whose outcome they cannot know).
    ``seed``: seed of the RNG behind the rates.
    ``extra_fields``: answer listPets as a newer API would, each pet with some fields beyond
    the interface's (:mod:`petsync.server.extra_fields`); not a fault, a behaviour to try.
    ``extra_fields_of``: which fields a pet then carries, given its id (a test may switch it
    to send other fields, other types, or an interface field spelled otherwise).
    """

    fail_rate: float = 0.0
    rate_limit: float | None = None
    latency_ms: float = 0.0
    fail_after_store_rate: float = 0.0
    seed: int = 0
    extra_fields: bool = False
    extra_fields_of: Callable[[int], dict[str, Any]] = field(
        default=demo_extra_fields, repr=False, compare=False
    )
    _rng: random.Random = field(init=False, repr=False, compare=False)
    _rng_seed: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._rng_seed = self.seed

    def roll(self, rate: float) -> bool:
        """True with probability ``rate`` (never draws when the rate is 0 or 1)."""
        if rate <= 0.0:
            return False
        if rate >= 1.0:
            return True
        if self._rng_seed != self.seed:  # the seed was switched live: restart the sequence
            self._rng = random.Random(self.seed)
            self._rng_seed = self.seed
        return self._rng.random() < rate


class TokenBucket:
    """A token bucket whose rate is read from :class:`Faults` on every request.

    The bucket holds at most ``max(1, rate)`` tokens (one second of traffic) and starts full.
    :meth:`take` answers None when a request may go on, else the whole seconds to wait
    (rounded up, at least 1), which the server sends as ``Retry-After``.
    """

    def __init__(self, faults: Faults, clock: Callable[[], float]) -> None:
        self._faults = faults
        self._clock = clock
        self._tokens: float | None = None
        self._last = 0.0

    def take(self) -> int | None:
        rate = self._faults.rate_limit
        if rate is None or rate <= 0:
            self._tokens = None  # switched off: start full when switched on again
            return None
        now = self._clock()
        capacity = max(1.0, rate)
        if self._tokens is None:
            self._tokens = capacity
        else:
            self._tokens = min(capacity, self._tokens + max(0.0, now - self._last) * rate)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return None
        return max(1, math.ceil((1.0 - self._tokens) / rate))
