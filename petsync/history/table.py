"""The history table: its schema, the content hash, and its files beside the snapshots.

The table lives in ``DIR/history/`` beside ``DIR/pets/``, as plain Parquet files of one
schema, so any reader takes the folder as one table::

    DIR/history/
      _history.json                 the nights folded in, their counts, the files below
      open-000012.parquet           the current versions (valid_to null), rewritten each run
      closed-2026-11-22.parquet     the versions the night of that date closed, written once

A night adds one ``closed-`` file (when it closed anything) and replaces the ``open-``
file; rows already closed are never rewritten. ``_history.json`` is written last and names
the files that make up the table, so :func:`petsync.history.load.load_history` reads one
consistent table even while an update runs; a file it does not name (left by a run that
was killed) is removed by the next update.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from petsync.core.errors import InputError
from petsync.core.files import atomic_write_text, fsync_dir

HISTORY_DIR = "history"
STATE_NAME = "_history.json"
STATE_FORMAT = 1
CONTENT_COLUMNS: tuple[str, ...] = ("name", "categoryId", "status")

HISTORY_SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        pa.field("categoryId", pa.int64(), nullable=False),
        pa.field("status", pa.string(), nullable=True),
        pa.field("hash", pa.int64(), nullable=False),
        pa.field("valid_from", pa.date32(), nullable=False),
        pa.field("valid_to", pa.date32(), nullable=True),
    ]
)


def history_dir(directory: Path) -> Path:
    """Where the history of the snapshots under ``directory`` (the export's --out) lives."""
    return Path(directory) / HISTORY_DIR


def content_hash(table: pa.Table) -> pa.Array:
    """A 64-bit hash of each row's ``name``, ``categoryId`` and ``status`` (null included).

    The first 8 bytes of BLAKE2b over the row's content as a compact JSON array
    (``["Rex",1,"sold"]``, ``null`` for no status), read as a signed big-endian int64: the
    same content gives the same value in every run, on every machine and in any language.
    Versions are told apart by comparing their content itself; the hash is a convenience
    for readers (equal content, equal hash).
    """
    rows = zip(
        table.column("name").to_pylist(),
        table.column("categoryId").to_pylist(),
        table.column("status").to_pylist(),
        strict=True,
    )
    values = [
        int.from_bytes(
            hashlib.blake2b(
                json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode(),
                digest_size=8,
            ).digest(),
            "big",
            signed=True,
        )
        for row in rows
    ]
    return pa.array(values, pa.int64())


def empty_history() -> pa.Table:
    return HISTORY_SCHEMA.empty_table()


@dataclass(frozen=True)
class Night:
    """One snapshot folded into the history, and what it did to it.

    ``trusted`` is the manifest's verdict (complete, and no suspicious drop: the export's
    exit 0); only a trusted night closes the versions of pets it lacks. ``opened`` counts
    new versions: ``added`` of pets not current before (new, or back after a gap) and
    ``changed`` of pets whose content changed; ``removed`` counts pets closed because the
    night lacked them, ``kept`` pets an untrusted night lacked but did not close.
    """

    date: dt.date
    run_id: str | None
    complete: bool
    trusted: bool
    pets: int
    quarantined: int
    drop_flagged: bool
    by_status: dict[str, int]
    added: int
    changed: int
    removed: int
    kept: int
    status_changes: dict[str, int] = field(default_factory=dict)

    @property
    def opened(self) -> int:
        return self.added + self.changed

    @property
    def closed(self) -> int:
        return self.changed + self.removed

    def to_json(self) -> dict[str, Any]:
        return {
            "date": self.date.isoformat(),
            "run_id": self.run_id,
            "complete": self.complete,
            "trusted": self.trusted,
            "pets": self.pets,
            "quarantined": self.quarantined,
            "drop_flagged": self.drop_flagged,
            "by_status": self.by_status,
            "added": self.added,
            "changed": self.changed,
            "removed": self.removed,
            "kept": self.kept,
            "status_changes": self.status_changes,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Night:
        return cls(
            date=dt.date.fromisoformat(data["date"]),
            run_id=data.get("run_id"),
            complete=bool(data["complete"]),
            trusted=bool(data["trusted"]),
            pets=int(data["pets"]),
            quarantined=int(data["quarantined"]),
            drop_flagged=bool(data["drop_flagged"]),
            by_status={str(k): int(v) for k, v in data["by_status"].items()},
            added=int(data["added"]),
            changed=int(data["changed"]),
            removed=int(data["removed"]),
            kept=int(data["kept"]),
            status_changes={str(k): int(v) for k, v in data.get("status_changes", {}).items()},
        )


@dataclass(frozen=True)
class HistoryState:
    """``_history.json``: the nights folded in (oldest first) and the files of the table."""

    nights: tuple[Night, ...]
    open_file: str | None
    closed_files: tuple[str, ...]
    generation: int

    @property
    def last_date(self) -> dt.date | None:
        return self.nights[-1].date if self.nights else None

    @property
    def files(self) -> list[str]:
        return [*self.closed_files, *([self.open_file] if self.open_file else [])]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "generation": self.generation,
            "open_file": self.open_file,
            "closed_files": list(self.closed_files),
            "nights": [night.to_json() for night in self.nights],
        }


EMPTY_STATE = HistoryState(nights=(), open_file=None, closed_files=(), generation=0)


def read_state(directory: Path) -> HistoryState | None:
    """The state of the history in ``directory`` (``DIR/history``), or None if there is none."""
    path = directory / STATE_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise InputError(
            f"cannot read {path}: {exc}; rebuild the history with `petsync history "
            f"{directory.parent} --rebuild`"
        ) from exc
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
        raise InputError(
            f"{path} is not a petsync history of format {STATE_FORMAT}; rebuild it with "
            f"`petsync history {directory.parent} --rebuild`"
        )
    try:
        return HistoryState(
            nights=tuple(Night.from_json(n) for n in data["nights"]),
            open_file=data["open_file"],
            closed_files=tuple(data["closed_files"]),
            generation=int(data["generation"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(
            f"{path} is damaged ({exc!r}); rebuild it with "
            f"`petsync history {directory.parent} --rebuild`"
        ) from exc


def write_state(directory: Path, state: HistoryState) -> None:
    """Write ``_history.json`` atomically: the moment the new table becomes the table."""
    atomic_write_text(directory / STATE_NAME, json.dumps(state.to_json(), indent=1) + "\n")


def write_table(directory: Path, name: str, table: pa.Table) -> None:
    """Write one file of the table under a hidden name, then rename it into place."""
    import pyarrow.parquet as pq

    temporary = directory / f".tmp-{secrets.token_hex(6)}-{name}"
    # Dictionaries only for status: ids and names are (nearly) unique, and building their
    # dictionaries costs more than it saves.
    pq.write_table(
        table.cast(HISTORY_SCHEMA), temporary, compression="zstd", use_dictionary=["status"]
    )
    os.replace(temporary, directory / name)
    fsync_dir(directory)


PIECE_ROWS = 65_536  # open versions read and written this many at a time


def open_pieces(path: Path) -> Iterator[pa.Table]:
    """The open file's versions, in id order, a piece at a time."""
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:
        raise InputError(
            f"cannot read {path}: {exc}; rebuild the history with "
            f"`petsync history {path.parent.parent} --rebuild`"
        ) from exc
    with handle:
        for batch in handle.iter_batches(batch_size=PIECE_ROWS):
            yield pa.Table.from_batches([batch]).cast(HISTORY_SCHEMA)


class OpenWriter:
    """Writes an open file piece by piece under a hidden name; renamed into place on close."""

    def __init__(self, directory: Path, name: str) -> None:
        import pyarrow.parquet as pq

        self._final = directory / name
        self._temporary = directory / f".tmp-{secrets.token_hex(6)}-{name}"
        self._writer = pq.ParquetWriter(
            self._temporary, HISTORY_SCHEMA, compression="zstd", use_dictionary=["status"]
        )

    def write(self, piece: pa.Table) -> None:
        if piece.num_rows:
            self._writer.write_table(piece.cast(HISTORY_SCHEMA), row_group_size=PIECE_ROWS)

    def __enter__(self) -> OpenWriter:
        return self

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        self._writer.close()
        if exc is not None:
            self._temporary.unlink(missing_ok=True)
            return
        os.replace(self._temporary, self._final)
        fsync_dir(self._final.parent)


def read_files(directory: Path, names: list[str], columns: list[str] | None = None) -> pa.Table:
    """The table made of the files ``names`` in ``directory`` (empty when there are none)."""
    import pyarrow.parquet as pq

    tables = []
    for name in names:
        try:
            tables.append(pq.read_table(directory / name, columns=columns))
        except (OSError, ValueError) as exc:
            raise InputError(
                f"cannot read {directory / name}: {exc}; rebuild the history with "
                f"`petsync history {directory.parent} --rebuild`"
            ) from exc
    schema = (
        HISTORY_SCHEMA if columns is None else pa.schema([HISTORY_SCHEMA.field(c) for c in columns])
    )
    if not tables:
        return schema.empty_table()
    return pa.concat_tables([t.cast(schema) for t in tables])


def open_name(generation: int) -> str:
    return f"open-{generation:06d}.parquet"


def closed_name(date: dt.date) -> str:
    return f"closed-{date.isoformat()}.parquet"
