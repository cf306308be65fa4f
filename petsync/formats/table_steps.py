"""What every table format does the same way: the steps of a night's commit, written once.

A table format (Delta: :mod:`.delta`, Iceberg: :mod:`.iceberg`) keeps every night in one
table at ``OUT/pets``, partitioned by ``snapshot_date``. :class:`TableFormat` runs the steps
they share, in this order: open the table, refuse one that is not petsync's or whose kept
columns changed type (:mod:`.table_schema`), count the night's statuses for the manifest,
copy the quarantine beside the table, prove the lock still held, replace the night's
partition with the manifest in the commit's properties, prune after a trusted night. A
format supplies the engine's part of each step: opening, partitioning, the write itself,
its versions and its history of commits.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import shutil
from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

from petsync.core.errors import ConfigError, InputError, PetsyncError
from petsync.core.settings_table import TABLE_FORMAT
from petsync.formats.night import Committed, Night, StatusCounts
from petsync.formats.schema import COLUMNS, PET_SCHEMA, conform
from petsync.formats.table_schema import (
    dated_schema,
    night_columns,
    plain_type,
    refuse_column_types,
    refuse_schema,
    schema_differences,
    type_clashes,
)
from petsync.storage.layout import (
    PARQUET_NAME,
    PARTITION_KEY,
    PETS_DIR,
    QUARANTINE_NAME,
    SnapshotInfo,
)
from petsync.storage.location import Location, parse_location

QUARANTINE_DIR = "_quarantine"
# The key of a commit's (or snapshot's) properties that holds the night's manifest.
MANIFEST_KEY = "petsync.manifest"
SCAN_ROWS = 1 << 16  # rows a streamed scan decodes at a time (history: memory flat)


class TableFormat(ABC):
    """A table format: the shared steps here, the engine's part in a subclass."""

    name: str  # the table_format setting's value, and the manifest's
    title: str  # how messages name the table's kind: Delta, Iceberg
    reads_whole = True  # a night is read through the table's library, not streamed
    by_case = False  # a kept field differing from a column only in case is refused
    untouched = "earlier snapshots are untouched"  # what a failed commit leaves

    # -- the engine's part ---------------------------------------------------------------

    @abstractmethod
    def open(self, location: Location) -> Any | None:
        """The table at ``OUT/pets``, or None when there is none."""

    @abstractmethod
    def partitioning(self, table: Any) -> str | None:
        """What the table is partitioned by when that is not petsync's date, else None."""

    @abstractmethod
    def arrow_schema(self, table: Any) -> pa.Schema:
        """The table's current schema, in Arrow."""

    @abstractmethod
    def write(self, night: Night, table: Any | None, manifest: str) -> tuple[Any, int | None]:
        """Replace the night's partition in one commit whose properties hold ``manifest``,
        adding the night's new kept columns; the table after it, and the version made."""

    @abstractmethod
    def nights(self, table: Any) -> set[dt.date]:
        """The dates the table holds now."""

    @abstractmethod
    def commit_errors(self) -> tuple[type[BaseException], ...]:
        """The engine's errors of a failed commit (translated into one message)."""

    @abstractmethod
    def manifests(self, table: Any) -> Iterator[dict[str, Any]]:
        """The manifests of the table's commits, newest first, with ``table_format`` and the
        ``table_version`` that committed each (:func:`commit_manifest`)."""

    @abstractmethod
    def scan(self, location: Location, date: dt.date, version: int | None) -> pa.Table | None:
        """The rows of one date at a table version (None: the current one), all columns;
        None when there is no table."""

    @abstractmethod
    def scan_batches(
        self, location: Location, date: dt.date, version: int | None, columns: list[str]
    ) -> Iterator[pa.RecordBatch] | None:
        """The rows of one date at a table version, ``columns`` only, a batch at a time and
        in no set order, holding one data file's worth at most; None when there is no table."""

    @abstractmethod
    def holds(self, location: Location) -> bool:
        """True when ``location`` holds this format's table (cheap: no engine loaded)."""

    @abstractmethod
    def night_sizes(self, location: Location, dates: list[dt.date]) -> dict[dt.date, int]:
        """Bytes of the table's current data files, by date (``petsync snapshots``)."""

    # -- the shared steps ----------------------------------------------------------------

    def check(self, location: Location) -> None:
        """Before the first API request: a table already there must be petsync's (exit 2)."""
        table = self.open(location)
        if table is not None:
            self.check_schema(table, table_uri(location), before_fetch=True)

    def check_schema(self, table: Any, where: str, *, before_fetch: bool = False) -> None:
        """Refuse a table whose schema is not the snapshot schema plus the date (then
        extra-field columns of petsync's types), or that is not partitioned by the date;
        the message names each difference."""
        found = self.arrow_schema(table)
        differences = schema_differences([(f.name, plain_type(f.type)) for f in found])
        other = self.partitioning(table)
        if other is not None:
            differences.append(f"it is partitioned by {other}, petsync's by {PARTITION_KEY}")
        refuse_schema(self.title, where, differences, before_fetch=before_fetch)

    def stage(self, night: Night) -> StatusCounts:
        """Check the table (again: the night's kept columns now known), count the statuses."""
        existing = self.open(night.location)
        if existing is not None:
            uri = table_uri(night.location)
            self.check_schema(existing, uri)
            found = {f.name: plain_type(f.type) for f in self.arrow_schema(existing)}
            clashes = type_clashes(found, night.columns, by_case=self.by_case)
            refuse_column_types(self.title, uri, clashes)
        counts = StatusCounts()
        for batch in night.rows.batches():
            counts.add(batch.column(3))
        return counts

    def commit(self, night: Night, manifest: str) -> Committed:
        """Commit the night as one atomic replacement of its date's partition, then prune."""
        location = night.location
        uri = table_uri(location)
        write_quarantine(night)
        night.lock.confirm()
        try:
            table, version = self.write(night, self.open(location), manifest)
            pruned: list[Path | str] = []
            if night.keep is not None and night.trusted:
                old = nights_to_prune(self.nights(table), night.keep, night.date)
                if old:
                    # Delta's and pyiceberg's delete both take the predicate as text.
                    table.delete(f"{PARTITION_KEY} <= '{max(old).isoformat()}'")
                pruned = [f"{uri} {PARTITION_KEY}={d.isoformat()}" for d in old]
        except self.commit_errors() as exc:
            raise PetsyncError(
                f"cannot commit the snapshot to the {self.title} table {uri}: {exc}. Nothing "
                f"was committed; {self.untouched}."
            ) from exc
        return Committed(uri, version, pruned)

    def manifest_files(self, *, trusted: bool, csv: bool) -> dict[str, str]:
        """The manifest's ``files``: a table names its data as a trusted night's."""
        return {"parquet": PARQUET_NAME, "quarantine": QUARANTINE_NAME}

    def list_nights(self, location: Location) -> list[SnapshotInfo]:
        """Each date still in the table, with the manifest of the commit that last wrote it."""
        table = self.open(location)
        if table is None:
            return []
        present = self.nights(table)
        found: dict[dt.date, SnapshotInfo] = {}
        for manifest in self.manifests(table):
            date = dt.date.fromisoformat(str(manifest.get("snapshot_date")))
            if date in present and date not in found:
                found[date] = SnapshotInfo(date, table_uri(location), manifest)
        return [found[date] for date in sorted(found)]

    def read_night(self, info: SnapshotInfo, *, known_only: bool = False) -> pa.Table:
        """The pets of one night, as of the version that committed it, ordered by id, with
        the extra-field columns that night kept (as its Parquet snapshot would hold them)."""
        data = self.scan(out_of(str(info.path)), info.date, committed_version(info))
        if data is None:
            raise InputError(f"no {self.title} table at {info.path}")
        return conform(night_columns(data, info.manifest)).sort_by("id")

    def night_batches(self, info: SnapshotInfo) -> Iterator[pa.Table]:
        """The pets of one night, as of the version that committed it, in the snapshot
        schema's columns only, a piece at a time in no set order: memory stays flat in the
        night's size (the history puts the pieces in id order itself)."""
        batches = self.scan_batches(
            out_of(str(info.path)), info.date, committed_version(info), list(COLUMNS)
        )
        if batches is None:
            raise InputError(f"no {self.title} table at {info.path}")
        for batch in batches:
            try:
                yield conform(pa.Table.from_batches([batch]))
            except ValueError as exc:
                where = f"the night of {info.date} at {info.path}"
                raise InputError(f"cannot read {where}: {exc}") from exc

    def night_at_version(self, location: Location, version: int) -> SnapshotInfo | None:
        """The night a table version committed (time travel), where the format has one."""
        return None


def committed_version(info: SnapshotInfo) -> int | None:
    """The table version that committed the night, from its manifest (None: the current)."""
    version = info.manifest.get("table_version")
    return version if isinstance(version, int) else None


def engine(package: str, needed: str, name: str) -> Any:
    """A table format's library, imported when first used; a :class:`ConfigError` saying how
    to install it when it is missing (``needed``: how the message names it)."""
    try:
        return importlib.import_module(package)
    except ImportError as exc:  # pragma: no cover - the format's extra is missing
        raise ConfigError(
            TABLE_FORMAT.given(name) + f" needs {needed}: pip install 'petsync[{name}]'"
        ) from exc


def table_uri(location: Location) -> str:
    """Where the table lives: ``OUT/pets`` (an absolute path for a local directory)."""
    if location.local is not None:
        return str(location.local.absolute() / PETS_DIR)
    return location.child(PETS_DIR)


def commit_manifest(text: object, name: str, version: object) -> dict[str, Any] | None:
    """The manifest a commit's properties hold, with the format and the version that
    committed it; None when they hold none (a commit not petsync's, or a prune)."""
    if not isinstance(text, str):
        return None
    try:
        manifest = json.loads(text)
    except ValueError:
        return None
    if not isinstance(manifest, dict):
        return None
    return {**manifest, "table_format": name, "table_version": version}


def write_quarantine(night: Night) -> None:
    """Copy the run's quarantine file beside the table (it has no place in the table)."""
    from petsync.storage.filesystem import open_filesystem

    source = night.staged.file(QUARANTINE_NAME)
    if not source.exists():
        return
    target = night.location.store_child(
        QUARANTINE_DIR, f"{PARTITION_KEY}={night.date.isoformat()}", QUARANTINE_NAME
    )
    filesystem = open_filesystem(night.location)
    filesystem.create_dir(target.rsplit("/", 1)[0], recursive=True)
    with filesystem.open_output_stream(target) as out, source.open("rb") as handle:
        shutil.copyfileobj(handle, out, 8 * 1024 * 1024)


def dated_batches(night: Night) -> Iterator[pa.RecordBatch]:
    """The night's rows with its date after the snapshot's columns, in
    :func:`~petsync.formats.table_schema.dated_schema`."""
    schema = dated_schema(night.columns)
    known = len(PET_SCHEMA)
    for batch in night.rows.batches(night.columns):
        dates = pa.array([night.date] * batch.num_rows, pa.date32())
        arrays = batch.columns
        yield pa.RecordBatch.from_arrays([*arrays[:known], dates, *arrays[known:]], schema=schema)


def nights_to_prune(dates: set[dt.date], keep: int, today: dt.date) -> list[dt.date]:
    """The nights ``--keep`` removes: all but the newest ``keep`` dated up to tonight.

    One dated after tonight (a clock that ran ahead) is never newer than tonight's, so
    tonight's is never pruned, nor is the later one.

    >>> day = dt.date(2026, 11, 25)
    >>> nights_to_prune({day, day.replace(day=24), day.replace(year=2027)}, 1, day)
    [datetime.date(2026, 11, 24)]
    """
    counted = sorted(d for d in dates if d <= today)
    return counted[: max(0, len(counted) - keep)]


def out_of(table_path: str) -> Location:
    """The export's OUT from the table's ``OUT/pets`` (a local path or a store URI)."""

    location = parse_location(table_path)
    if location.local is not None:
        return parse_location(location.local.parent)
    return parse_location(table_path.rsplit("/", 1)[0])


def holds_folder(location: Location, name: str) -> bool:
    """True when ``OUT/pets/NAME`` is a folder: how a table is told apart without its library
    (a reader of dated folders asks first, and must not pay for loading deltalake or
    pyiceberg)."""
    import pyarrow.fs as pafs

    from petsync.storage.filesystem import open_filesystem

    try:
        info = open_filesystem(location).get_file_info(location.store_child(PETS_DIR, name))
    except OSError:
        return False
    return bool(info.type == pafs.FileType.Directory)
