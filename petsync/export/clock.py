"""The run's clock against the API's: a snapshot is named by this machine's UTC date.

A clock a year ahead would publish ``snapshot_date=2027-...`` without a word, and that
snapshot would then be "the newest" for pruning and the drop check. Every answer of the
API carries a ``Date`` header (RFC 9110 asks an origin server with a clock to send one).
A :class:`ClockWatch` sees each answer as it arrives (the client calls it per response), so
the **first** answer with a ``Date`` is compared with the local clock, before a second page is
asked for: a wrong clock stops the run at once, not after the whole catalogue was fetched.
Later answers are compared too, and after the listings the latest of them once more (the
local clock may jump during a long run). Beyond the tolerance (``--clock-tolerance``,
:data:`~petsync.core.interface.CLOCK_TOLERANCE` seconds by default) the run publishes nothing
and fails (exit 1), naming both times: a snapshot under a wrong date would be worse than
none. Without any ``Date`` header there is nothing to compare and the run goes on.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from petsync.core.errors import PetsyncError
from petsync.core.settings_table import CLOCK_TOLERANCE
from petsync.core.wording import Placeholder


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
            f"UTC: the local clock is {_gap(abs(self.skew))} {side} the server's, more than "
            + CLOCK_TOLERANCE.given(Placeholder(f"{self.tolerance:g}"))
            + f" s, and the snapshot would be dated {snapshot_date}. Nothing was published. "
            "Set this machine's clock (NTP: timedatectl set-ntp true) and re-run; raise "
            + CLOCK_TOLERANCE
            + " if the server's clock is the wrong one"
        )


def check_clock(dates: Iterable[str | None], now: dt.datetime, tolerance: float) -> ClockCheck:
    """Compare ``now`` with the latest of the answers' ``Date`` headers."""
    return ClockCheck(now.astimezone(dt.UTC), server_time(dates), tolerance)


class ClockWatch:
    """Compares each answer's ``Date`` header with the local clock as the answers arrive.

    Hand :meth:`answered` to the client as its response observer (or call :meth:`dated` with
    a listing's last ``Date``): the first answer beyond ``tolerance`` raises the refusal
    (:meth:`ClockCheck.error`) there and then, in the thread that received it, which ends the
    listing and so the run. A ``Date`` equal to the last one checked is not parsed again (a
    server's clock ticks once a second; a listing's pages come faster). Thread-safe.

    >>> watch = ClockWatch(lambda: dt.datetime(2026, 11, 27, 9, tzinfo=dt.UTC), 300,
    ...                    dt.date(2026, 11, 27))
    >>> watch.dated("Fri, 27 Nov 2026 09:01:00 GMT")     # a minute apart: fine
    >>> watch.dated("Thu, 26 Nov 2026 09:00:00 GMT")     # doctest: +ELLIPSIS
    Traceback (most recent call last):
    petsync.core.errors.PetsyncError: this machine's clock says 2026-11-27 09:00:00 UTC, ...
    """

    def __init__(
        self, now: Callable[[], dt.datetime], tolerance: float, snapshot_date: dt.date
    ) -> None:
        self._now = now
        self._tolerance = tolerance
        self._snapshot_date = snapshot_date
        self._lock = threading.Lock()
        self._last: str | None = None
        self._refused: tuple[dt.datetime, dt.datetime | None, float] | None = None

    def answered(self, headers: Mapping[str, str]) -> None:
        """The client's response observer: check the answer's ``Date`` header, if any."""
        self.dated(headers.get("date"))

    def dated(self, value: str | None) -> None:
        """Check one ``Date`` header value; raise the refusal when the clocks are too far apart."""
        if not value:
            return
        with self._lock:
            if value == self._last:
                if self._refused:  # every thread that meets it stops
                    raise ClockCheck(*self._refused).error(self._snapshot_date)
                return
        check = check_clock([value], self._now(), self._tolerance)
        with self._lock:
            self._last = value
            self._refused = (check.local, check.server, check.tolerance) if check.off else None
        if check.off:
            raise check.error(self._snapshot_date)


def _gap(seconds: float) -> str:
    """A clock's gap as a person reads it, the seconds kept for scripts.

    >>> _gap(86402), _gap(5400), _gap(412)
    ('86402 s (1 day)', '5400 s (1.5 hours)', '412 s (6.9 minutes)')
    """
    text = f"{seconds:.0f} s"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = seconds / size
            shown = f"{count:.1f}".removesuffix(".0")
            return f"{text} ({shown} {unit}{'' if shown == '1' else 's'})"
    return text
