"""Progress of an export on a stream: a live table on a terminal, plain lines otherwise.

On a terminal (``live=True``) one line per listing shows pages, pets and rate, redrawn in
place at most every :data:`REDRAW_SECONDS`. Elsewhere (cron, a pipe, a log file, or a
terminal whose ``TERM`` is ``dumb``, which cannot move the cursor: Emacs' shell, some CI
consoles) nothing is drawn while paging and one line per listing is written when it ends, so
logs stay readable. The stream, the environment and the clock are injected; this module
never decides where output goes.
"""

from __future__ import annotations

import contextlib
import io
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # the display only reads the export's results
    from petsync.export.fetch import ListingResult

REDRAW_SECONDS = 0.1


@dataclass
class _Row:
    pages: int = 0
    pets: int = 0
    started: float = 0.0
    ended: float | None = None
    done: str = ""


class ProgressDisplay:
    """Implements :class:`petsync.export.run.ExportProgress` on a text stream (thread-safe).

    >>> import io
    >>> out = io.StringIO()
    >>> display = ProgressDisplay(out, live=False, clock=lambda: 0.0)
    >>> display.listing_started("sold")
    >>> out.getvalue()
    ''
    """

    def __init__(
        self, stream: TextIO, *, live: bool, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._stream = stream
        self._live = live
        self._clock = clock
        self._lock = threading.Lock()
        self._rows: dict[str, _Row] = {}
        self._drawn_lines = 0
        self._last_draw = float("-inf")

    def listing_started(self, label: str) -> None:
        with self._lock:
            self._rows[label] = _Row(started=self._clock())
            self._redraw(force=True)

    def page_done(self, label: str, pages: int, pets: int) -> None:
        # Called for every page by every listing's thread, so it takes no lock it would wait
        # for: threads that meet at a lock on every page hand the interpreter over at each
        # meeting (a convoy), which costs more than their pages. A row is written by its
        # listing's thread alone; a redraw already under way is simply not repeated.
        row = self._rows.get(label)
        if row is None:
            with self._lock:
                row = self._rows.setdefault(label, _Row(started=self._clock()))
        row.pages, row.pets = pages, pets
        if self._live and self._lock.acquire(blocking=False):
            try:
                self._redraw(force=False)
            finally:
                self._lock.release()

    def listing_done(self, result: ListingResult) -> None:
        with self._lock:
            row = self._rows.setdefault(result.label, _Row(started=self._clock()))
            row.pages, row.pets = result.pages, result.pets
            row.done = "complete" if result.complete else "INCOMPLETE"
            row.ended = self._clock()
            if self._live:
                self._redraw(force=True)
            else:
                self._stream.write(format_listing_line(result) + "\n")
                self._stream.flush()

    def close(self) -> None:
        """Leave the cursor below the live table."""
        with self._lock:
            if self._live and self._drawn_lines:
                self._redraw(force=True)
            self._drawn_lines = 0

    def _redraw(self, *, force: bool) -> None:
        if not self._live:
            return
        now = self._clock()
        if not force and now - self._last_draw < REDRAW_SECONDS:
            return
        self._last_draw = now
        lines = []
        for label, row in self._rows.items():
            # A finished listing's rate is frozen at its end, not diluted by later redraws.
            elapsed = max((row.ended if row.ended is not None else now) - row.started, 1e-9)
            rate = row.pets / elapsed
            state = row.done or "paging"
            lines.append(
                f"  {label:<10} {row.pages:>7} pages {row.pets:>10} pets "
                f"{rate:>9.0f} pets/s  {state}"
            )
        # Move up over the previous drawing and overwrite it line by line.
        prefix = f"\x1b[{self._drawn_lines}F" if self._drawn_lines else ""
        self._stream.write(prefix + "".join(f"\x1b[2K{line}\n" for line in lines))
        self._stream.flush()
        self._drawn_lines = len(lines)


def format_listing_line(result: ListingResult) -> str:
    """The one line written per listing when not on a terminal."""
    state = "complete" if result.complete else f"INCOMPLETE ({result.incomplete_reason})"
    rate = result.pets / result.seconds if result.seconds > 0 else 0.0
    return (
        f"export listing={result.label} style={result.style} pages={result.pages} "
        f"pets={result.pets} invalid={result.invalid} retries={result.retries} "
        f"seconds={result.seconds:.2f} rate={rate:.0f}/s {state}"
    )


def is_live_terminal(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """True when ``stream`` is a terminal that can redraw lines (``TERM`` is not ``dumb``)."""
    return stream.isatty() and environ.get("TERM", "") != "dumb"


@contextlib.contextmanager
def progress_display(
    stream: TextIO, *, json_logs: bool, environ: Mapping[str, str]
) -> Iterator[ProgressDisplay]:
    """The display an export shows on ``stream`` (stderr), closed when the block ends.

    Live on a terminal that can redraw (:func:`is_live_terminal`). With JSON logs and no
    live terminal nothing is shown: stderr carries JSON lines only, and the
    ``export.listing_done`` log event has the same facts.
    """
    live = is_live_terminal(stream, environ)
    display = ProgressDisplay(io.StringIO() if json_logs and not live else stream, live=live)
    try:
        yield display
    finally:
        display.close()
