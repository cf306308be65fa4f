"""Rows repeated inside one sheet: found by the check stage, sent once unless asked otherwise.

A row is a repeat of an earlier one when every cell is the same, spaces around values
aside (``petsync_*`` columns are not compared: they are petsync's own). Only rows that
would be sent count: a repeated invalid row is rejected like its first copy. By default
a repeat is not sent (the import reports it, with the row it repeats);
``--allow-duplicates`` sends every copy as it is.

The cells of every row seen are kept as a 16-byte digest in a file in a working folder,
not in a Python set, so the check of a file of millions of rows stays within the import's
flat memory. A filter of fixed size (a Bloom filter, 4 MiB) tells the rows whose digest
may have been seen from those certainly new; only the digests it flags are compared
exactly, in an SQLite file (:func:`~petsync.importer.row_states.working_db`), once every
row was seen. A sheet with no repeated row, the usual one, needs no SQLite work at all.
"""

from __future__ import annotations

import array
import hashlib
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path

from petsync.importer.row_states import working_db

# Repeats the report names one by one; past this it gives the count only.
LISTED_REPEATS = 20


class RepeatedRows:
    """The rows of one sheet that repeat an earlier row, by their row number (``line``).

    :meth:`see` each row in order, then :meth:`finish`; then :meth:`first_of` answers for
    any row. The digests of the rows seen go to a working file a few thousand at a time;
    :meth:`finish` compares those the filter flagged (all of them if it flagged many) in
    one query, which sorts on disk. Thread-safe. The working folder is made afresh in the
    system's temporary directory and removed by :meth:`close` (or when the object is
    collected).

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
        self._filter = bytearray(_FILTER_MASK // 8 + 1)
        self._digests = (self._dir / "digests").open("wb")  # 16 bytes a row, in order
        self._lines = (self._dir / "lines").open("wb")  # the rows' lines, 8 bytes each
        self._pending: list[bytes] = []  # digests not yet in the file
        self._pending_lines = array.array("q")
        self._flagged: set[bytes] | None = set()  # digests the filter may have seen; None: many
        self.count = 0
        self.listed: list[tuple[int, int]] = []  # (row, the row it repeats), the first few

    def see(self, line: int, cells: Sequence[str], columns: Sequence[int] | None = None) -> None:
        """Note row ``line`` (rows come in order): its ``cells``, or those at ``columns``
        (blank where the row is short)."""
        if columns is None:
            kept = [cell.strip() for cell in cells]
        else:
            size = len(cells)
            kept = [cells[i].strip() if i < size else "" for i in columns]
        digest = _digest(kept)
        with self._lock:
            if self._seen_before(digest) and self._flagged is not None:
                self._flagged.add(digest)
                if len(self._flagged) > _FLAGGED_KEPT:
                    self._flagged = None  # compare every digest
            self._pending.append(digest)
            self._pending_lines.append(line)
            if len(self._pending) >= _BATCH:
                self._flush()

    def _seen_before(self, digest: bytes) -> bool:
        """Mark ``digest`` in the filter; True if every one of its bits was set already (it
        may have been seen), False if it certainly was not."""
        # Called with the lock held. The digest is uniform: three slices of it are the bits.
        value = int.from_bytes(digest, "little")
        one = value & _FILTER_MASK
        two = (value >> 32) & _FILTER_MASK
        three = (value >> 64) & _FILTER_MASK
        bits = self._filter
        seen = (
            bits[one >> 3] >> (one & 7) & 1
            and bits[two >> 3] >> (two & 7) & 1
            and bits[three >> 3] >> (three & 7) & 1
        )
        bits[one >> 3] |= 1 << (one & 7)
        bits[two >> 3] |= 1 << (two & 7)
        bits[three >> 3] |= 1 << (three & 7)
        return bool(seen)

    def finish(self) -> None:
        """Every row was seen: find the repeats (``count`` and ``listed`` are final)."""
        with self._lock:
            self._flush()
            self._digests.close()
            self._lines.close()
            flagged = self._flagged
            if flagged is None or flagged:
                rows = self._written()
                if flagged is not None:
                    rows = (row for row in rows if row[0] in flagged)
                self._db.executemany("INSERT INTO seen VALUES (?, ?)", rows)
                # Each row whose digest an earlier row has, with the first row of that digest.
                self._db.execute(
                    """
                    INSERT INTO repeats
                    SELECT line, first FROM (
                        SELECT line, min(line) OVER (PARTITION BY digest) AS first FROM seen
                    ) WHERE line != first
                    """
                )
                self._db.execute("DELETE FROM seen")
            for name in ("digests", "lines"):
                (self._dir / name).unlink()
            self._filter = bytearray()
            self._flagged = set()
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
        self._digests.write(b"".join(self._pending))
        self._lines.write(self._pending_lines.tobytes())
        self._pending.clear()
        self._pending_lines = array.array("q")

    def _written(self) -> Iterator[tuple[bytes, int]]:
        """The (digest, line) of every row seen, from the working files, a batch at a time."""
        with (
            (self._dir / "digests").open("rb") as digests,
            (self._dir / "lines").open("rb") as lines,
        ):
            while True:
                chunk = digests.read(_DIGEST_SIZE * _BATCH)
                if not chunk:
                    return
                numbers = array.array("q")
                numbers.frombytes(lines.read(8 * (len(chunk) // _DIGEST_SIZE)))
                for index, line in enumerate(numbers):
                    start = index * _DIGEST_SIZE
                    yield chunk[start : start + _DIGEST_SIZE], line

    def first_of(self, line: int) -> int | None:
        """The earlier row that row ``line`` repeats, or None (a first copy, or not seen)."""
        if not self.count:
            return None
        with self._lock:
            found = self._db.execute("SELECT first FROM repeats WHERE line = ?", (line,)).fetchone()
        return None if found is None else int(found[0])

    def close(self) -> None:
        with self._lock:
            self._digests.close()
            self._lines.close()
            self._db.close()
        self._remove()


_BATCH = 8_192
_DIGEST_SIZE = 16
# The filter's size, a power of two: three bits a row, so a million distinct rows flag a
# few hundred digests by chance (compared exactly, and found distinct).
_FILTER_MASK = (1 << 25) - 1
# Flagged digests kept in memory (a sheet of many repeats): past this, every digest is
# compared (the rows appended to the SQLite file and sorted there).
_FLAGGED_KEPT = 65_536


def _digest(kept: list[str]) -> bytes:
    """The digest of a row's cells, stripped (``kept`` loses its trailing blank cells)."""
    while kept and not kept[-1]:  # a row with trailing blank cells is the same row
        kept.pop()
    # repr() of the tuple is an unambiguous text of the cells (quotes escaped), made in C.
    return hashlib.blake2b(repr(tuple(kept)).encode(), digest_size=_DIGEST_SIZE).digest()
