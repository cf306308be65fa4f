"""The run's clock against the API's: a snapshot is named by this machine's UTC date.

A clock a year ahead would publish ``snapshot_date=2027-...`` without a word, and that
snapshot would then be "the newest" for pruning and the drop check. Every answer of the
API carries a ``Date`` header (RFC 9110 asks an origin server with a clock to send one);
after the listings, the latest of them is compared with the local clock. Beyond the
tolerance (``--clock-tolerance``, :data:`~petsync.core.interface.CLOCK_TOLERANCE` seconds
by default) the run publishes nothing and fails (exit 1), naming both times: a snapshot
under a wrong date would be worse than none. Without any ``Date`` header there is nothing
to compare and the run goes on.
"""

from __future__ import annotations

import datetime as dt
import email.utils
from collections.abc import Iterable
from dataclasses import dataclass

from petsync.core.errors import PetsyncError


def server_time(headers: Iterable[str | None]) -> dt.datetime | None:
    """The latest time among ``Date`` header values (UTC); those that do not parse are skipped.

    >>> server_time(["Sun, 06 Nov 1994 08:49:37 GMT", None, "soon"]).isoformat()
    '1994-11-06T08:49:37+00:00'
    """
    times: list[dt.datetime] = []
    for value in headers:
        if not value:
            continue
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            continue
        if parsed.tzinfo is None:  # "-0000": UTC, origin unknown (RFC 5322)
            parsed = parsed.replace(tzinfo=dt.UTC)
        times.append(parsed.astimezone(dt.UTC))
    return max(times, default=None)


@dataclass(frozen=True)
class ClockCheck:
    """The local time and the server's, and whether they are too far apart."""

    local: dt.datetime
    server: dt.datetime | None
    tolerance: float

    @property
    def skew(self) -> float | None:
        """Seconds the local clock is ahead of the server's (negative: behind)."""
        if self.server is None:
            return None
        return (self.local - self.server).total_seconds()

    @property
    def off(self) -> bool:
        skew = self.skew
        return skew is not None and abs(skew) > self.tolerance

    def error(self, snapshot_date: dt.date) -> PetsyncError:
        """The refusal to publish, naming both times."""
        assert self.server is not None and self.skew is not None
        local = self.local.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
        server = self.server.strftime("%Y-%m-%d %H:%M:%S")
        side = "ahead of" if self.skew > 0 else "behind"
        return PetsyncError(
            f"this machine's clock says {local} UTC, but the API's Date header says {server} "
            f"UTC: the local clock is {abs(self.skew):.0f} s {side} the server's, more than "
            f"--clock-tolerance {self.tolerance:g} s, and the snapshot would be dated "
            f"{snapshot_date}. Nothing was published. Set this machine's clock (NTP: "
            "timedatectl set-ntp true) and re-run; raise --clock-tolerance if the server's "
            "clock is the wrong one"
        )


def check_clock(dates: Iterable[str | None], now: dt.datetime, tolerance: float) -> ClockCheck:
    """Compare ``now`` with the latest of the answers' ``Date`` headers."""
    return ClockCheck(now.astimezone(dt.UTC), server_time(dates), tolerance)
