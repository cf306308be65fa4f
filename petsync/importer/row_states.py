"""What the journal knows of each row (:class:`RowRecord`), and the latest record of every
row kept on disk (:class:`RowStates`): memory does not grow with the file.

The journal (JSON lines) is the record that survives a crash; this is its index by row
number, rebuilt from it whenever a journal is opened, so it needs no durability of its own:
an SQLite file in a working folder beside the journal (:func:`working_db`), written without
a rollback journal or syncs, read through SQLite's small page cache. A 10-million-row
import keeps a few megabytes of it in memory instead of a dictionary of ten million records.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any


class RowState(StrEnum):
    """What the journal knows about one row."""

    SENDING = "sending"  # durable before the POST; last state after a crash = uncertain
    CREATED = "created"
    REJECTED = "rejected"  # the API answered 4xx: final
    UNCERTAIN = "uncertain"  # sent, outcome unknown (timeout, dropped connection, 5xx)
    UNSENT = "unsent"  # surely not created (401, 429 exhausted, refused): send again


@dataclass(frozen=True)
class RowRecord:
    """One journal line about one row."""

    row: int
    state: RowState
    id: int | None = None
    code: str | None = None
    field: str | None = None
    message: str | None = None
    http_status: int | None = None
    candidates: tuple[int, ...] | None = None  # settle could not tell: pets that may be it
    # A row sent from a fix file (a fed-back reject file): that file's name, and the pet as
    # sent (name, categoryId, status), so the first file's outputs can show what was made.
    via: str | None = None
    pet: tuple[str, int, str | None] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"row": self.row, "state": self.state.value}
        for key in ("id", "code", "field", "message", "http_status", "via"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.candidates is not None:
            out["candidates"] = list(self.candidates)
        if self.pet is not None:
            out["pet"] = list(self.pet)
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> RowRecord:
        return cls(
            row=int(obj["row"]),
            state=RowState(obj["state"]),
            id=obj.get("id"),
            code=obj.get("code"),
            field=obj.get("field"),
            message=obj.get("message"),
            http_status=obj.get("http_status"),
            candidates=tuple(obj["candidates"]) if obj.get("candidates") is not None else None,
            via=obj.get("via"),
            pet=_pet(obj.get("pet")),
        )


def _pet(value: Any) -> tuple[str, int, str | None] | None:
    if value is None:
        return None
    name, category, status = value
    return (str(name), int(category), None if status is None else str(status))


class RowStates:
    """Row number -> latest :class:`RowRecord`, on disk.

    Thread-safe. ``directory`` is the working folder, made afresh (what a killed run left
    there is removed first); by default a new folder in the system's temporary directory.
    It is removed by :meth:`close`, or when the object is collected.

    >>> states = RowStates()
    >>> states[7] = RowRecord(7, RowState.CREATED, id=41)
    >>> states.get(7).id, states.get(8), len(states), states.has_created_id(41)
    (41, None, 1, True)
    >>> states.close()
    """

    def __init__(self, directory: Path | None = None) -> None:
        if directory is None:
            directory = Path(tempfile.mkdtemp(prefix="petsync-rows-"))
        self._dir = directory
        self._db = working_db(
            directory,
            """
            CREATE TABLE rows (row INTEGER PRIMARY KEY, state TEXT NOT NULL, id INTEGER,
                               record TEXT);
            CREATE INDEX created_ids ON rows (id) WHERE state = 'created';
            BEGIN;
            """,
        )
        self._remove = weakref.finalize(self, shutil.rmtree, self._dir, True)
        self._lock = threading.Lock()
        # One long transaction, committed every so often: a commit writes pages out, and
        # nothing here needs to survive a crash (the journal does). SQLite spills pages to
        # the file when its small cache is full, so memory stays flat either way.
        self._uncommitted = 0
        # The latest records wait here and go to the table a few thousand at a time: one
        # statement per batch costs a fraction of one per record. Bounded by _FLUSH_AT.
        self._recent: dict[int, RowRecord] = {}
        self._stored = 0  # records ever written to the table (0: nothing to look up there)
        # The highest row number in the table: a row past it is not there (the send stage
        # asks after each new row before journaling it, so it never has to look).
        self._highest = -(2**63)

    def get(self, row: int) -> RowRecord | None:
        with self._lock:
            recent = self._recent.get(row)
            if recent is not None or not self._stored or row > self._highest:
                return recent
            found = self._db.execute(
                "SELECT row, state, id, record FROM rows WHERE row = ?", (row,)
            ).fetchone()
        return None if found is None else _record(*found)

    def __getitem__(self, row: int) -> RowRecord:
        record = self.get(row)
        if record is None:
            raise KeyError(row)
        return record

    def __setitem__(self, row: int, record: RowRecord) -> None:
        self.update([record])

    def update(self, records: Iterable[RowRecord]) -> None:
        """Record each of ``records`` as its row's latest (in one transaction)."""
        with self._lock:
            for record in records:
                self._recent[record.row] = record
            if len(self._recent) >= _FLUSH_AT:
                self._flush()

    def _flush(self) -> None:
        # Called with the lock held.
        if not self._recent:
            return
        values = [(r.row, r.state.value, r.id, _details(r)) for r in self._recent.values()]
        self._db.executemany("INSERT OR REPLACE INTO rows VALUES (?, ?, ?, ?)", values)
        self._highest = max(self._highest, max(self._recent))
        self._recent.clear()
        self._stored += len(values)
        self._uncommitted += len(values)
        if self._uncommitted >= _COMMIT_EVERY:
            self._db.execute("COMMIT")
            self._db.execute("BEGIN")
            self._uncommitted = 0

    def has_created_id(self, pet_id: int) -> bool:
        """Whether a row of this journal created the pet ``pet_id``."""
        with self._lock:
            self._flush()
            found = self._db.execute(
                "SELECT 1 FROM rows WHERE state = 'created' AND id = ? LIMIT 1", (pet_id,)
            ).fetchone()
        return found is not None

    def __len__(self) -> int:
        with self._lock:
            self._flush()
            (count,) = self._db.execute("SELECT count(*) FROM rows").fetchone()
        return int(count)

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._recent) or bool(self._stored)

    def items(self) -> Iterator[tuple[int, RowRecord]]:
        """Every row's latest record, by row number (read in pages: memory stays flat)."""
        after = -(2**63)
        while True:
            with self._lock:
                self._flush()
                page = self._db.execute(
                    "SELECT row, state, id, record FROM rows WHERE row > ? ORDER BY row LIMIT 1000",
                    (after,),
                ).fetchall()
            if not page:
                return
            for found in page:
                yield found[0], _record(*found)
            after = page[-1][0]

    def values(self) -> Iterator[RowRecord]:
        return (record for _, record in self.items())

    def __eq__(self, other: object) -> bool:  # tests compare with a dict
        if isinstance(other, dict):
            return dict(self.items()) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def close(self) -> None:
        with self._lock:
            self._db.close()
        self._remove()


def working_db(directory: Path, schema: str) -> sqlite3.Connection:
    """A new SQLite database of ``schema`` in ``directory``, made afresh (what a killed run
    left there is removed first), for data rebuilt on every run: no rollback journal, no
    syncs, one process holding it. Usable from any thread under the caller's lock."""
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    db = sqlite3.connect(directory / "db.sqlite", check_same_thread=False, isolation_level=None)
    db.executescript(
        "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
        "PRAGMA temp_store=FILE;\n" + schema
    )
    return db


_FLUSH_AT = 4_096
_COMMIT_EVERY = 16_384


def _details(record: RowRecord) -> str | None:
    """The whole record as JSON when it holds more than a state and an id, else None."""
    plain = (
        record.code,
        record.field,
        record.message,
        record.http_status,
        record.candidates,
        record.via,
        record.pet,
    )
    if all(value is None for value in plain):
        return None
    return json.dumps(record.to_json(), ensure_ascii=False)


def _record(row: int, state: str, pet_id: int | None, details: str | None) -> RowRecord:
    if details is not None:
        return RowRecord.from_json(json.loads(details))
    return RowRecord(row, RowState(state), id=pet_id)
