"""Progress of an import on a terminal: one line redrawn in place; nothing in cron.

The line shows rows read, sent, created, rejected and uncertain and the rate, at most every
:data:`REDRAW_SECONDS`. It is drawn only when stderr is a terminal and ``TERM`` is not
``dumb``; in cron, a pipe or a log file nothing is drawn (the summary says it all). The
stream and the clock are injected.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TextIO

REDRAW_SECONDS = 0.1


def shows_progress(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """True on a terminal that can redraw a line (not ``TERM=dumb``)."""
    return stream.isatty() and environ.get("TERM", "") != "dumb"


class ImportProgressLine:
    """Implements :class:`petsync.importer.sender.SendProgress` as one live line.

    >>> import io
    >>> out = io.StringIO()
    >>> line = ImportProgressLine(out, "pets.csv", clock=iter([0.0, 0.0, 2.0, 2.0, 2.0]).__next__)
    >>> line.row_read(valid=True); line.row_sent(); line.row_done("created"); line.close()
    >>> out.getvalue().splitlines()[-1]
    'pets.csv: read 1, sent 1, created 1, rejected 0, uncertain 0, 0 rows/s'
    """

    def __init__(
        self, stream: TextIO, label: str, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._stream = stream
        self._label = label
        self._clock = clock
        self._lock = threading.Lock()
        self._started = clock()
        self._last_draw = float("-inf")
        self._read = 0
        self._sent = 0
        self._done: Counter[str] = Counter()

    def row_read(self, *, valid: bool) -> None:
        with self._lock:
            self._read += 1
            if not valid:
                self._done["rejected"] += 1
            self._draw(force=False)

    def row_sent(self) -> None:
        with self._lock:
            self._sent += 1
            self._draw(force=False)

    def row_done(self, outcome: str) -> None:
        with self._lock:
            self._done[outcome] += 1
            self._draw(force=False)

    def close(self) -> None:
        """Draw the last state and end the line."""
        with self._lock:
            self._draw(force=True)
            self._stream.write("\n")
            self._stream.flush()

    def _draw(self, *, force: bool) -> None:
        now = self._clock()
        if not force and now - self._last_draw < REDRAW_SECONDS:
            return
        self._last_draw = now
        elapsed = now - self._started
        rate = self._done["created"] / elapsed if elapsed > 0 else 0.0
        self._stream.write(
            f"\x1b[2K\r{self._label}: read {self._read}, sent {self._sent}, created "
            f"{self._done['created']}, rejected {self._done['rejected']}, uncertain "
            f"{self._done['uncertain']}, {rate:.0f} rows/s"
        )
        self._stream.flush()
