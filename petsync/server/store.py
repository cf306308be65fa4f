"""The reference server's catalogue: pets in SQLite, paged by keyset or offset.

Ids come from ``INTEGER PRIMARY KEY AUTOINCREMENT``, so an id is never handed out twice,
not even after the highest pet is gone or the server restarts on the same file. An index on
``(status, id)`` makes a status-filtered keyset page one index range scan.

One connection is shared by the event loop and by tests calling the store directly; a lock
serialises it. Every statement is short, so the async endpoints call it inline rather than
hopping to a thread pool (the export benchmark pages a million pets through it).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from petsync.core.models import NewPet, Pet

logger = logging.getLogger(__name__)

Row = tuple[int, str, int, str | None]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pets (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    category_id INTEGER NOT NULL,
    status TEXT
);
CREATE INDEX IF NOT EXISTS pets_status_id ON pets (status, id);
"""
_COLUMNS = "id, name, category_id, status"


class StoreFullError(Exception):
    """SQLite cannot hand out another id (a pet with id 2**63-1 exists)."""


class PetStore:
    """Pets in one SQLite database: a file (``db_path``) or, by default, memory.

    >>> store = PetStore()
    >>> store.create(NewPet("Rex", 1)).id
    1
    >>> store.count()
    1
    """

    def __init__(self, db_path: Path | None = None) -> None:
        self.db_path = db_path
        target = str(db_path) if db_path is not None else ":memory:"
        # isolation_level=None: each statement commits on its own, so a pet the server
        # answered 201 for is on disk even if the process is killed right after.
        self._conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        try:
            if db_path is not None:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
        except sqlite3.Error:
            self._conn.close()
            raise

    # -- writes -----------------------------------------------------------------------------

    def create(self, pet: NewPet) -> Pet:
        """Store a new pet under a fresh id (never one used before) and return it."""
        status = pet.status.value if pet.status is not None else None
        with self._lock:
            try:
                cur = self._conn.execute(
                    "INSERT INTO pets (name, category_id, status) VALUES (?, ?, ?)",
                    (pet.name, pet.categoryId, status),
                )
            except sqlite3.OperationalError as exc:  # SQLITE_FULL once id 2**63-1 is taken
                raise StoreFullError(str(exc)) from exc
            pet_id = cur.lastrowid
        assert pet_id is not None
        return Pet(id=pet_id, name=pet.name, categoryId=pet.categoryId, status=status)

    def insert(self, pet: Pet) -> Pet:
        """Store a pet under its own id (crafted catalogues: huge or negative ids, odd status).

        Raises :class:`sqlite3.IntegrityError` if the id is taken.
        """
        with self._lock:
            self._conn.execute(
                "INSERT INTO pets (id, name, category_id, status) VALUES (?, ?, ?, ?)",
                (pet.id, pet.name, pet.categoryId, pet.status),
            )
        return pet

    def insert_many(self, rows: Iterable[Row]) -> int:
        """Store rows ``(id, name, categoryId, status)`` in one transaction; return how many."""
        return self._in_one_transaction(
            "INSERT INTO pets (id, name, category_id, status) VALUES (?, ?, ?, ?)", rows
        )

    def update_many(self, rows: Iterable[Row]) -> int:
        """Change the name, category and status of pets ``(id, name, categoryId, status)``.

        The interface has no update: this is the shelter's own system at work, as the demo
        plays it between two nights. Returns how many pets changed."""
        changes = [(name, category, status, pet_id) for pet_id, name, category, status in rows]
        return self._in_one_transaction(
            "UPDATE pets SET name = ?, category_id = ?, status = ? WHERE id = ?", changes
        )

    def delete_many(self, ids: Iterable[int]) -> int:
        """Remove pets by id (no endpoint does: the shelter's own system, as above)."""
        return self._in_one_transaction("DELETE FROM pets WHERE id = ?", [(i,) for i in ids])

    def _in_one_transaction(self, sql: str, rows: Iterable[tuple[object, ...]]) -> int:
        with self._lock:
            before = self._conn.total_changes
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(sql, rows)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return self._conn.total_changes - before

    # -- reads ------------------------------------------------------------------------------

    def get(self, pet_id: int) -> Pet | None:
        """The pet with this id, or None."""
        with self._lock:
            row = self._conn.execute(
                f"SELECT {_COLUMNS} FROM pets WHERE id = ?", (pet_id,)
            ).fetchone()
        return _pet(row) if row is not None else None

    def all(self) -> list[Pet]:
        """Every pet, ordered by id (tests and small catalogues only)."""
        with self._lock:
            rows = self._conn.execute(f"SELECT {_COLUMNS} FROM pets ORDER BY id").fetchall()
        return [_pet(r) for r in rows]

    def ever_held_pets(self) -> bool:
        """True once any pet was stored here, even if every pet is gone since.

        ``AUTOINCREMENT`` keeps the highest id ever handed out in ``sqlite_sequence``; seeding
        a catalogue that once held pets could hand those ids out again.
        """
        with self._lock:
            row = self._conn.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = 'pets'"
            ).fetchone()
            (n,) = self._conn.execute("SELECT count(*) FROM pets").fetchone()
        return row is not None or n > 0

    def count(self) -> int:
        """How many pets are stored."""
        with self._lock:
            (n,) = self._conn.execute("SELECT count(*) FROM pets").fetchone()
        return int(n)

    def page_after(self, after: int | None, limit: int, status: str | None) -> list[Row]:
        """Keyset page: up to ``limit`` rows with id greater than ``after``, by id."""
        where, params = _where(status)
        if after is not None:
            where.append("id > ?")
            params.append(after)
        return self._page(where, params, limit, 0)

    def page_offset(self, offset: int, limit: int, status: str | None) -> list[Row]:
        """Offset page: up to ``limit`` rows after skipping ``offset``, by id."""
        where, params = _where(status)
        return self._page(where, params, limit, offset)

    def _page(self, where: list[str], params: list[object], limit: int, offset: int) -> list[Row]:
        sql = f"SELECT {_COLUMNS} FROM pets"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id LIMIT ? OFFSET ?"
        with self._lock:
            rows: list[Row] = self._conn.execute(sql, (*params, limit, offset)).fetchall()
        return rows

    def close(self) -> None:
        """Commit nothing pending (every write is already committed) and close the file."""
        with self._lock:
            self._conn.close()


def _where(status: str | None) -> tuple[list[str], list[object]]:
    if status is None:
        return [], []
    return ["status = ?"], [status]


def _pet(row: Row) -> Pet:
    return Pet(id=row[0], name=row[1], categoryId=row[2], status=row[3])
