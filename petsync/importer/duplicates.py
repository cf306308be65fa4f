"""Rows repeated inside one sheet: found by the check pass, sent once unless asked otherwise.

A row is a repeat of an earlier one when every cell is the same, spaces around values
aside (``petsync_*`` columns are not compared: they are petsync's own). Only rows that
would be sent count: a repeated invalid row is rejected like its first copy. By default
a repeat is not sent (the import reports it, with the row it repeats);
``--allow-duplicates`` sends every copy as it is.

The cells of every row seen are kept as a 16-byte digest in an SQLite file in a working
folder (:func:`~petsync.importer.row_states.working_db`), not in a Python set, so the
check of a file of millions of rows stays within the import's flat memory.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path

from petsync.importer.row_states import working_db

# Repeats the report names one by one; past this it gives the count only.
LISTED_REPEATS = 20


class RepeatedRows:
    """The rows of one sheet that repeat an earlier row, by their row number (``line``).

    :meth:`see` each row in order, then :meth:`finish`; then :meth:`first_of` answers for
    any row. Rows seen wait in memory a few thousand at a time and are appended to the
    table in batches (one statement per batch costs a fraction of one per row);
    :meth:`finish` finds the repeats in one query, which sorts on disk. Thread-safe. The
    working folder is made afresh in the system's temporary directory and removed by
    :meth:`close` (or when the object is collected).

    >>> repeats = RepeatedRows()
    >>> for n, cells in [(2, ["Rex", "1"]), (3, ["Rex ", "1", ""]), (4, ["Tom", "1"])]:
    ...     repeats.see(n, cells)
    >>> repeats.finish()
    >>> repeats.first_of(3), repeats.first_of(4), repeats.count, repeats.listed
    (2, None, 1, [(3, 2)])
    >>> repeats.close()
    """

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="petsync-repeats-"))
        self._db = working_db(
            self._dir,
            """
            CREATE TABLE seen (digest BLOB NOT NULL, line INTEGER NOT NULL);
            CREATE TABLE repeats (line INTEGER PRIMARY KEY, first INTEGER NOT NULL);
            BEGIN;
            """,
        )
        self._remove = weakref.finalize(self, shutil.rmtree, self._dir, True)
        self._lock = threading.Lock()
        self._pending: list[tuple[bytes, int]] = []  # (digest, line), not yet in the table
        self.count = 0
        self.listed: list[tuple[int, int]] = []  # (row, the row it repeats), the first few

    def see(self, line: int, cells: Sequence[str], columns: Sequence[int] | None = None) -> None:
        """Note row ``line`` (rows come in order): its ``cells``, or those at ``columns``
        (blank where the row is short)."""
        if columns is not None:
            cells = [cells[i] if i < len(cells) else "" for i in columns]
        entry = (_digest(cells), line)
        with self._lock:
            self._pending.append(entry)
            if len(self._pending) >= _BATCH:
                self._flush()

    def finish(self) -> None:
        """Every row was seen: find the repeats (``count`` and ``listed`` are final)."""
        with self._lock:
            self._flush()
            # Each row whose digest an earlier row has, with the first row of that digest.
            self._db.execute(
                """
                INSERT INTO repeats
                SELECT line, first FROM (
                    SELECT line, min(line) OVER (PARTITION BY digest) AS first FROM seen
                ) WHERE line != first
                """
            )
            self._db.execute("DROP TABLE seen")
            self.count = int(self._db.execute("SELECT count(*) FROM repeats").fetchone()[0])
            self.listed = [
                (int(line), int(first))
                for line, first in self._db.execute(
                    "SELECT line, first FROM repeats ORDER BY line LIMIT ?", (LISTED_REPEATS,)
                )
            ]
            self._db.execute("COMMIT")
            self._db.execute("BEGIN")

    def _flush(self) -> None:
        # Called with the lock held.
        self._db.executemany("INSERT INTO seen VALUES (?, ?)", self._pending)
        self._pending.clear()

    def first_of(self, line: int) -> int | None:
        """The earlier row that row ``line`` repeats, or None (a first copy, or not seen)."""
        if not self.count:
            return None
        with self._lock:
            found = self._db.execute("SELECT first FROM repeats WHERE line = ?", (line,)).fetchone()
        return None if found is None else int(found[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
        self._remove()


_BATCH = 8_192


def _digest(cells: Sequence[str]) -> bytes:
    kept = [cell.strip() for cell in cells]
    while kept and not kept[-1]:  # a row with trailing blank cells is the same row
        kept.pop()
    # repr() of the tuple is an unambiguous text of the cells (quotes escaped), made in C.
    return hashlib.blake2b(repr(tuple(kept)).encode(), digest_size=16).digest()
