"""The history table: its schema, its nights and its files beside the snapshots.

The table lives in ``DIR/history/`` beside ``DIR/pets/`` (a local directory or an
object-store prefix), as plain Parquet files of one schema, so any reader takes the folder
as one table::

    DIR/history/
      _history.json                    the nights folded in, their counts, the files below
      open-000012.parquet              the current versions (valid_to null), rewritten each run
      closed-2026-11-22-000012.parquet the versions the night of that date closed, written once

A night adds one ``closed-`` file (when it closed anything) and replaces the ``open-``
file; rows already closed are never rewritten. The number is the generation that wrote the
file: no name is ever written twice. ``_history.json`` is written last and names
the files that make up the table, so :func:`petsync.history.load.load_history` reads one
consistent table even while an update runs; a file it does not name (left by a run that
was killed) is removed by the next update.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from petsync.core.errors import ConfigError, InputError, PetsyncError
from petsync.core.files import atomic_write_text, fsync_dir, fsync_file, own_folder
from petsync.core.settings_table import HISTORY_COMMAND, REBUILD
from petsync.core.wording import COMMAND_LINE, Call
from petsync.history.row_groups import row_group_sink
from petsync.history.status_codes import StatusCodes, coded_schema, coded_table
from petsync.storage.location import Location, parse_location
from petsync.storage.lock import LOCK_NAME as EXPORT_LOCK_NAME

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


# The open versions as an update reads and writes them: the status coded
# (:mod:`petsync.history.status_codes`). The file itself stores plain Parquet strings.
OPEN_SCHEMA: pa.Schema = coded_schema(HISTORY_SCHEMA)


def history_dir(directory: Path) -> Path:
    """Where the history of the snapshots under a local ``directory`` (the export's --out) lives."""
    return Path(directory) / HISTORY_DIR


def empty_history() -> pa.Table:
    """A table of no versions (``Schema.empty_table()`` would import pandas)."""
    return pa.Table.from_batches([], schema=HISTORY_SCHEMA)


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


PIECE_ROWS = 1 << 17  # open versions read and written this many at a time
RELEASE_GROUPS = 16  # row groups written between two returns of freed memory to the system

# How the table's files are encoded (every reader of Parquet reads them): dictionaries for the
# few-valued columns; ids, in order, as deltas; the hash, random bits, stored as they are
# (zstd would only spend time failing to shrink them). A night's update encodes every open
# version: these choices write 20% and read 25% faster than zstd and plain values throughout.
# Minimum and maximum only where a reader can skip row groups by them (ids, categories and
# dates): in a file in id order every row group spans all names, statuses and hashes, and
# their statistics cost a fifth of the writing.
WRITE_OPTIONS: dict[str, Any] = {
    "compression": {name: "none" if name == "hash" else "zstd" for name in HISTORY_SCHEMA.names},
    "use_dictionary": ["status", "categoryId", "valid_from", "valid_to"],
    "column_encoding": {"id": "DELTA_BINARY_PACKED"},
    "write_statistics": ["id", "categoryId", "valid_from", "valid_to"],
}
LOCK_OBJECT_NAME = EXPORT_LOCK_NAME  # on an object store: the lock, in OUT/history
_GENERATION = re.compile(r"^(?:open|closed-\d{4}-\d{2}-\d{2})-(\d+)\.parquet$")


def open_name(generation: int) -> str:
    return f"open-{generation:06d}.parquet"


def closed_name(date: dt.date, generation: int) -> str:
    """The file of the versions the night of ``date`` closed, written by ``generation``.

    The generation makes every name new: a rebuild never writes over a file the current
    state names, so readers see the old table or the new one, on any store.
    """
    return f"closed-{date.isoformat()}-{generation:06d}.parquet"


@dataclass(frozen=True)
class HistoryFiles:
    """The history's folder, ``OUT/history``, on a local disk or an object store.

    Every file is read and written through the location's ``pyarrow.fs`` file system. A
    file is written under a name no state names yet (locally: a hidden name, renamed into
    place), and ``_history.json``, written last in one step, makes the new files the table.
    """

    location: Location  # the export's --out
    filesystem: pafs.FileSystem

    @classmethod
    def open(cls, directory: Path | str | Location) -> HistoryFiles:
        from petsync.storage.filesystem import open_filesystem

        location = (
            directory
            if isinstance(directory, Location)
            else parse_location(directory, what="directory")
        )
        files = cls(location, open_filesystem(location))
        if not files.is_local:
            files.check()
        return files

    @property
    def is_local(self) -> bool:
        return self.location.local is not None

    @property
    def root(self) -> str:
        return self.location.store_child(HISTORY_DIR)

    def path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def shown(self, name: str | None = None) -> str:
        """The folder (or a file in it) as users see it: a path or a URI."""
        return self.location.child(HISTORY_DIR, *([name] if name else []))

    def rebuild_hint(self) -> Call:
        """The history rebuilt, as the reader runs it (command line or library)."""
        return HISTORY_COMMAND.run(self.location.uri, REBUILD.given(True))

    def _damaged(self, name: str | None, exc: BaseException) -> InputError:
        return InputError(
            f"cannot read {self.shown(name)}: {exc}; rebuild the history with "
            + self.rebuild_hint()
        )

    def _store_error(self, exc: OSError, doing: str) -> PetsyncError:
        """A store's error while ``doing``: the bucket, what went wrong and the fix.

        A missing bucket, refused credentials or an unreachable store is exit 2, any other
        failure exit 1; either way ``_history.json`` names the table it named before, unless
        only the removal of replaced files failed (the next update removes them).
        """
        from petsync.storage.filesystem import classify, store_error

        said = store_error(self.location, exc, doing=doing, before_fetch=True).render(COMMAND_LINE)
        kind = PetsyncError if classify(exc) == "other" else ConfigError
        return kind(self._reworded(said))

    def _reworded(self, said: str) -> str:
        """The export's message about the store (read in the command line's terms, whose
        prefix names its option), said of the history."""
        what = said.removeprefix(f"cannot use --out {self.location}: ")
        what = what.removesuffix(" Nothing was fetched.").rstrip(".")
        return f"the history at {self.shown()}: {what}."

    def _unreadable(self, name: str | None, exc: OSError | ValueError) -> PetsyncError:
        """A file that cannot be read: the store's error, or a damaged file (rebuild)."""
        if (
            isinstance(exc, OSError)
            and not isinstance(exc, FileNotFoundError)
            and not self.is_local
        ):
            return self._store_error(exc, f"reading {self.shown(name)}")
        return self._damaged(name, exc)

    def check(self) -> None:
        """Reach the store: a missing bucket or refused credentials fail here, exit 2."""
        from petsync.storage.filesystem import check_reachable

        try:
            check_reachable(self.location, self.filesystem)
        except ConfigError as exc:
            raise ConfigError(self._reworded(exc.render(COMMAND_LINE))) from exc

    def prepare(self) -> None:
        """Create the folder on a local disk (an object store has no folders to create)."""
        if self.location.local is not None:
            own_folder(self.location.local / HISTORY_DIR, "history folder")

    def read_state(self) -> HistoryState | None:
        """The state ``_history.json`` holds, or None if there is none."""
        try:
            with self.filesystem.open_input_file(self.path(STATE_NAME)) as handle:
                text = handle.read().decode("utf-8")
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise self._unreadable(STATE_NAME, exc) from exc
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise self._damaged(STATE_NAME, exc) from exc
        if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
            raise InputError(
                f"{self.shown(STATE_NAME)} is not a petsync history of format {STATE_FORMAT}; "
                "rebuild it with " + self.rebuild_hint()
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
                f"{self.shown(STATE_NAME)} is damaged ({exc!r}); rebuild it with "
                + self.rebuild_hint()
            ) from exc

    def write_state(self, state: HistoryState) -> None:
        """Write ``_history.json`` in one step: the moment the new table becomes the table."""
        text = json.dumps(state.to_json(), indent=1) + "\n"
        if self.location.local is not None:
            atomic_write_text(self.location.local / HISTORY_DIR / STATE_NAME, text)
            return
        try:  # one PUT: the object is the old state or the new one, never half
            with self.filesystem.open_output_stream(self.path(STATE_NAME)) as handle:
                handle.write(text.encode("utf-8"))
        except OSError as exc:
            raise self._store_error(exc, "writing the history's state") from exc

    @contextlib.contextmanager
    def _output(self, name: str) -> Iterator[str]:
        """A path to write ``name`` at; it appears under its name once the block ends.

        Locally the file is written under a hidden name and renamed into place. On an object
        store the upload is the object's only write; an upload cut short leaves a file no
        state names, which the next update removes.
        """
        if not self.is_local:
            try:
                yield self.path(name)
            except OSError as exc:
                raise self._store_error(exc, f"writing {self.shown(name)}") from exc
            return
        temporary = self.path(f".tmp-{secrets.token_hex(6)}-{name}")
        try:
            yield temporary
        except BaseException:
            if self._exists(temporary):
                self.filesystem.delete_file(temporary)
            raise
        fsync_file(Path(temporary))  # on disk before any state can name it
        self.filesystem.move(temporary, self.path(name))
        assert self.location.local is not None
        fsync_dir(self.location.local / HISTORY_DIR)

    def _exists(self, path: str) -> bool:
        return bool(self.filesystem.get_file_info(path).type == pafs.FileType.File)

    def write_table(self, name: str, table: pa.Table) -> None:
        """Write one file of the table."""
        import pyarrow.parquet as pq

        with self._output(name) as path:
            pq.write_table(
                table.cast(HISTORY_SCHEMA), path, filesystem=self.filesystem, **WRITE_OPTIONS
            )

    @contextlib.contextmanager
    def open_writer(self, name: str) -> Iterator[Callable[[pa.Table], None]]:
        """A sink writing the open file ``name`` piece by piece, in place once the block ends."""
        import pyarrow.parquet as pq

        with self._output(name) as path:
            # The coded status is written as Parquet's dictionary without a string hashed;
            # no Arrow schema is stored, so every reader reads it back as strings, the
            # other columns as HISTORY_SCHEMA has them.
            writer = pq.ParquetWriter(
                path,
                OPEN_SCHEMA,
                filesystem=self.filesystem,
                store_schema=False,
                **WRITE_OPTIONS,
            )

            try:
                with row_group_sink(writer, OPEN_SCHEMA, PIECE_ROWS, RELEASE_GROUPS) as write:
                    yield write
            finally:
                writer.close()

    def open_pieces(self, name: str, statuses: StatusCodes) -> Iterator[pa.Table]:
        """The open file's versions, in id order, a piece at a time (OPEN_SCHEMA: the
        status coded by ``statuses``)."""
        import pyarrow.parquet as pq

        try:
            handle = pq.ParquetFile(
                self.filesystem.open_input_file(self.path(name)),
                pre_buffer=True,
                read_dictionary=["status"],
            )
        except (OSError, ValueError) as exc:
            raise self._unreadable(name, exc) from exc
        with handle:
            # One row group at a time: pyarrow pre-buffers (reads in one request per row
            # group, on an object store) every row group a read asks for and keeps it until
            # the next read, so a read of the whole file would end up holding all of it.
            # Decoded on the calling thread: it already reads ahead beside the fold.
            batches = (
                batch
                for group in range(handle.metadata.num_row_groups)
                for batch in handle.iter_batches(
                    batch_size=PIECE_ROWS, row_groups=[group], use_threads=False
                )
            )
            while True:
                try:
                    batch = next(batches, None)
                except (OSError, ValueError) as exc:
                    raise self._unreadable(name, exc) from exc
                if batch is None:
                    return
                table = pa.Table.from_batches([batch])
                yield coded_table(table.replace_schema_metadata(None), statuses).cast(OPEN_SCHEMA)

    def read_files(self, names: list[str], columns: list[str] | None = None) -> pa.Table:
        """The table made of the files ``names`` (empty when there are none)."""
        import pyarrow.parquet as pq

        tables = []
        for name in names:
            try:
                tables.append(
                    pq.read_table(self.path(name), columns=columns, filesystem=self.filesystem)
                )
            except (OSError, ValueError) as exc:
                raise self._unreadable(name, exc) from exc
        schema = (
            HISTORY_SCHEMA
            if columns is None
            else pa.schema([HISTORY_SCHEMA.field(c) for c in columns])
        )
        if not tables:
            return schema.empty_table()
        return pa.concat_tables([t.cast(schema) for t in tables])

    def rows(self, name: str) -> int:
        import pyarrow.parquet as pq

        try:
            with self.filesystem.open_input_file(self.path(name)) as handle:
                return int(pq.read_metadata(handle).num_rows)
        except (OSError, ValueError) as exc:
            raise self._unreadable(name, exc) from exc

    def names(self) -> list[str]:
        """The files in the folder (none when there is no folder)."""
        selector = pafs.FileSelector(self.root, allow_not_found=True)
        try:
            entries = self.filesystem.get_file_info(selector)
        except OSError as exc:
            raise self._store_error(exc, f"listing {self.shown()}") from exc
        return sorted(e.base_name for e in entries if e.type == pafs.FileType.File)

    def remove(self, name: str) -> None:
        try:
            self.filesystem.delete_file(self.path(name))
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise self._store_error(exc, f"removing {self.shown(name)}") from exc

    def last_generation(self) -> int:
        """The highest generation any file in the folder carries (0 when none does)."""
        found = [_GENERATION.match(name) for name in self.names()]
        return max((int(m.group(1)) for m in found if m), default=0)
