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

    Thread-safe. The working folder is made afresh in the system's temporary directory and
    removed by :meth:`close` (or when the object is collected).

    >>> repeats = RepeatedRows()
    >>> [repeats.see(n, cells) for n, cells in [(2, ["Rex", "1"]), (3, ["Rex ", "1"])]]
    [None, 2]
    >>> repeats.first_of(3), repeats.count, repeats.listed
    (2, 1, [(3, 2)])
    >>> repeats.close()
    """

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="petsync-repeats-"))
        self._db = working_db(
            self._dir,
            """
            CREATE TABLE seen (digest BLOB PRIMARY KEY, line INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE repeats (line INTEGER PRIMARY KEY, first INTEGER NOT NULL);
            BEGIN;
            """,
        )
        self._remove = weakref.finalize(self, shutil.rmtree, self._dir, True)
        self._lock = threading.Lock()
        self.count = 0
        self.listed: list[tuple[int, int]] = []  # (row, the row it repeats), the first few

    def see(self, line: int, cells: Sequence[str]) -> int | None:
        """Note row ``line``; the earlier row it repeats, or None for a first copy."""
        digest = _digest(cells)
        with self._lock:
            inserted = self._db.execute(
                "INSERT OR IGNORE INTO seen VALUES (?, ?)", (digest, line)
            ).rowcount
            if inserted:
                return None
            (first,) = self._db.execute(
                "SELECT line FROM seen WHERE digest = ?", (digest,)
            ).fetchone()
            self._db.execute("INSERT OR REPLACE INTO repeats VALUES (?, ?)", (line, first))
            self.count += 1
            if len(self.listed) < LISTED_REPEATS:
                self.listed.append((line, int(first)))
            return int(first)

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


def _digest(cells: Sequence[str]) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    kept = [cell.strip() for cell in cells]
    while kept and not kept[-1]:  # a row with trailing blank cells is the same row
        kept.pop()
    for cell in kept:
        text = cell.encode("utf-8", "surrogatepass")
        digest.update(len(text).to_bytes(8, "little"))
        digest.update(text)
    return digest.digest()
