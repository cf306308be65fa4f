"""Snapshot layout on disk, and reading it: listing, resolving and loading snapshots.

One export run makes one snapshot partition, named by its UTC date::

    DIR/
      .petsync.lock                    the run lock (see petsync.export.lock)
      .petsync-tmp/                    staging area; leftovers of a killed run are removed
      pets/
        snapshot_date=2026-11-22/
          pets.parquet                 the pets (zstd), the one schema of petsync.export.schema
          _pets.csv                    the same rows as CSV (unless --format parquet)
          _quarantine.jsonl            records that broke the interface, one JSON per line
          _manifest.json               counts, completeness, provenance; written last

Files whose names start with ``_`` or ``.`` are skipped by pyarrow's dataset discovery, so
``pandas.read_parquet("DIR/pets")`` reads every ``pets.parquet`` as one table with
``snapshot_date`` as a column, and DuckDB's ``DIR/pets/*/*.parquet`` glob matches only them.

The same layout lives under an object-store prefix (``s3://bucket/prefix/pets/...``);
every function here takes a local directory or such a URI (:mod:`petsync.export.location`)
and reads through ``pyarrow.fs``. How a snapshot gets there is :mod:`petsync.export.publish`
(local: staged, then renamed into place in one step) and
:mod:`petsync.export.objectstore.publish` (object stores: staged, then copied, the data
before the manifest); this module only reads what is published.

A partition counts as published when its Parquet file's footer names the run (``run_id``)
whose manifest vouches for it: the partition's own manifest, or, while that run is still
publishing on an object store, the manifest it staged. A reader never pairs one run's data
with another run's manifest, whatever moment it reads at. (Manifests written before run
ids existed are taken as they are.)
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from petsync.core.errors import InputError
from petsync.export.location import Location, parse_location

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.fs as pafs

PETS_DIR = "pets"
PARTITION_KEY = "snapshot_date"
PARQUET_NAME = "pets.parquet"
CSV_NAME = "_pets.csv"
QUARANTINE_NAME = "_quarantine.jsonl"
MANIFEST_NAME = "_manifest.json"
STAGING_DIR = ".petsync-tmp"
RUN_ID_KEY = b"petsync.run_id"  # in the Parquet footer's key-value metadata

_PARTITION_RE = re.compile(rf"^{PARTITION_KEY}=(\d{{4}}-\d{{2}}-\d{{2}})$")


@dataclass(frozen=True)
class SnapshotInfo:
    """A published snapshot: its date, its partition (a local path or a URI), its manifest."""

    date: dt.date
    path: Path | str
    manifest: dict[str, Any]

    @property
    def complete(self) -> bool:
        """True when the export that wrote it proved every listing complete."""
        return self.manifest.get("complete") is True

    @property
    def pets(self) -> int:
        value = self.manifest.get("pets", 0)
        return value if isinstance(value, int) else 0

    @property
    def run_id(self) -> str | None:
        """The id of the run that wrote it (None for snapshots written before run ids)."""
        value = self.manifest.get("run_id")
        return value if isinstance(value, str) and value else None

    @property
    def parquet_path(self) -> Path | str:
        if isinstance(self.path, Path):
            return self.path / PARQUET_NAME
        return f"{self.path}/{PARQUET_NAME}"


def pets_root(directory: Path) -> Path:
    return Path(directory) / PETS_DIR


def partition_name(date: dt.date) -> tuple[str, str]:
    """The partition of ``date`` below the location: ``("pets", "snapshot_date=...")``."""
    return PETS_DIR, f"{PARTITION_KEY}={date.isoformat()}"


def partition_date(name: str) -> dt.date | None:
    """The date of a partition folder's name, or None if it is not one."""
    match = _PARTITION_RE.match(name)
    if not match:
        return None
    try:
        return dt.date.fromisoformat(match.group(1))
    except ValueError:
        return None


def partition_path(directory: Path, date: dt.date) -> Path:
    """Where the snapshot of ``date`` lives under ``directory``."""
    return Path(directory).joinpath(*partition_name(date))


@dataclass(frozen=True)
class _Store:
    """A location opened for reading: its file system and how to name what is in it."""

    location: Location
    filesystem: pafs.FileSystem

    @classmethod
    def open(cls, directory: Path | str | Location, what: str = "directory") -> _Store:
        from petsync.export.objectstore.filesystem import open_filesystem, store_error

        location = (
            directory if isinstance(directory, Location) else parse_location(directory, what=what)
        )
        try:
            return cls(location, open_filesystem(location))
        except OSError as exc:  # pragma: no cover - a file system that cannot even start
            raise _read_error(location, exc, store_error) from exc

    def store_path(self, *parts: str) -> str:
        return self.location.store_child(*parts)

    def shown(self, *parts: str) -> Path | str:
        """How callers see a path: a :class:`Path` for a local directory, else a URI."""
        if self.location.local is not None:
            return self.location.local.joinpath(*parts)
        return self.location.child(*parts)

    def read_bytes(self, path: str) -> bytes:
        """One whole object or file, in one read (a consistent copy even while replaced)."""
        with self.filesystem.open_input_file(path) as handle:
            data: bytes = handle.read()
        return data

    def info(self, date: dt.date) -> SnapshotInfo | None:
        """The published snapshot of ``date``, or None if its partition is not one."""
        return self.partition_info(
            self.store_path(*partition_name(date)), self.shown(*partition_name(date)), date
        )

    def partition_info(
        self, partition: str, shown: Path | str, date: dt.date
    ) -> SnapshotInfo | None:
        """The snapshot in the partition at ``partition`` (a store path), or None.

        The data is vouched for by the manifest of the run that wrote it: the partition's
        own, or, while that run is publishing on an object store (its data copied in, its
        manifest not yet), the manifest it staged beside its other files.
        """
        manifest = self.manifest(f"{partition}/{MANIFEST_NAME}")
        if manifest is not None and not _run_id(manifest):
            return SnapshotInfo(date, shown, manifest)  # written before run ids: as it is
        footer = self.footer_run_id(f"{partition}/{PARQUET_NAME}")
        if footer is None:
            return None
        if manifest is None or _run_id(manifest) != footer:
            manifest = self.manifest(self.store_path(STAGING_DIR, footer, MANIFEST_NAME))
        if manifest is None or _run_id(manifest) != footer:
            return None  # data without its run's manifest: a dead run the next one cleans
        return SnapshotInfo(date, shown, manifest)

    def manifest(self, path: str) -> dict[str, Any] | None:
        try:
            manifest = json.loads(self.read_bytes(path))
        except (OSError, ValueError):
            return None
        return manifest if isinstance(manifest, dict) else None

    def footer_run_id(self, path: str) -> str | None:
        import pyarrow.parquet as pq

        try:
            with self.filesystem.open_input_file(path) as handle:
                metadata = pq.read_schema(handle).metadata or {}
        except (OSError, ValueError):
            return None
        value = metadata.get(RUN_ID_KEY)
        return value.decode("utf-8", "replace") if value is not None else None

    def dates(self) -> list[dt.date]:
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self.store_path(PETS_DIR), allow_not_found=True)
        try:
            entries = self.filesystem.get_file_info(selector)
        except OSError as exc:
            from petsync.export.objectstore.filesystem import store_error

            raise _read_error(self.location, exc, store_error) from exc
        found = [
            partition_date(entry.base_name)
            for entry in entries
            if entry.type == pafs.FileType.Directory
        ]
        return sorted(date for date in found if date is not None)


def _is_delta(location: Location) -> bool:
    from petsync.export.delta import is_delta

    return is_delta(location)


def _iceberg_snapshots(location: Location) -> list[SnapshotInfo] | None:
    """The snapshots of an Iceberg table at ``location``, or None when it holds none."""
    from petsync.export.iceberg import is_iceberg, list_iceberg_snapshots

    return list_iceberg_snapshots(location) if is_iceberg(location) else None


def _run_id(manifest: dict[str, Any]) -> str | None:
    value = manifest.get("run_id")
    return value if isinstance(value, str) and value else None


def _read_error(location: Location, exc: OSError, store_error: Any) -> InputError:
    error = store_error(location, exc, doing="reading snapshots", before_fetch=True)
    return InputError(str(error).replace("cannot use --out", "cannot read snapshots at", 1))


def manifest_run_id(filesystem: pafs.FileSystem, path: str) -> str | None:
    """The ``run_id`` a manifest names, or None if it is unreadable or names none."""
    try:
        with filesystem.open_input_file(path) as handle:
            manifest = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    value = manifest.get("run_id") if isinstance(manifest, dict) else None
    return value if isinstance(value, str) else None


def list_snapshots(directory: Path | str) -> list[SnapshotInfo]:
    """Every published snapshot under ``directory`` (a path or a URI), oldest first.

    A partition without a readable manifest, or whose data another run wrote than its
    manifest says, is not a published snapshot and is skipped.

    >>> [(s.date.isoformat(), s.complete, s.pets) for s in list_snapshots("out")]  # doctest: +SKIP
    [('2026-11-21', True, 10000), ('2026-11-22', True, 10012)]
    >>> list_snapshots("s3://archive/petsync")[-1].path                    # doctest: +SKIP
    's3://archive/petsync/pets/snapshot_date=2026-11-22'
    """
    store = _Store.open(directory)
    if _is_delta(store.location):
        from petsync.export.delta import list_delta_snapshots

        return list_delta_snapshots(store.location)
    iceberg = _iceberg_snapshots(store.location)
    if iceberg is not None:
        return iceberg
    found = [store.info(date) for date in store.dates()]
    return [info for info in found if info is not None]


def latest_snapshot(directory: Path | str, *, complete_only: bool = True) -> SnapshotInfo | None:
    """The newest snapshot (the newest complete one unless ``complete_only`` is False)."""
    snapshots = [s for s in list_snapshots(directory) if s.complete or not complete_only]
    return snapshots[-1] if snapshots else None


def find_snapshot(
    ref: str | Path | dt.date, *, directory: Path | str | None = None
) -> SnapshotInfo:
    """Resolve a snapshot reference: a date (``2026-11-22``) under ``directory``, or a path.

    A path (or URI) may be a partition directory or the ``pets.parquet`` inside one.
    Raises :class:`InputError` naming what was looked for.
    """
    if isinstance(ref, dt.date):
        date: dt.date | None = ref
    else:
        try:
            date = dt.date.fromisoformat(str(ref))
        except ValueError:
            date = None
    if date is not None:
        store = _Store.open(directory if directory is not None else Path("."), "--dir")
        if _is_delta(store.location):
            from petsync.export.delta import list_delta_snapshots

            match = [s for s in list_delta_snapshots(store.location) if s.date == date]
            if not match:
                raise _not_a_snapshot(f"{store.shown(PETS_DIR)} ({PARTITION_KEY}={date})")
            return match[0]
        iceberg = _iceberg_snapshots(store.location)
        if iceberg is not None:
            match = [s for s in iceberg if s.date == date]
            if not match:
                raise _not_a_snapshot(f"{store.shown(PETS_DIR)} ({PARTITION_KEY}={date})")
            return match[0]
        info = store.info(date)
        if info is None:
            raise _not_a_snapshot(str(store.shown(*partition_name(date))))
        return info
    location = parse_location(ref if isinstance(ref, Path) else str(ref), what="snapshot")
    if location.local is not None:
        path = location.local.parent if location.local.is_file() else location.local
        location = parse_location(path)
    elif location.prefix.split("/")[-1] == PARQUET_NAME:
        location = parse_location(location.uri.rsplit("/", 1)[0], what="snapshot")
    name = location.local.name if location.local is not None else location.uri.rsplit("/", 1)[-1]
    partition = partition_date(name)
    store = _Store.open(location)
    found = (
        store.partition_info(location.store_path, store.shown(), partition)
        if partition is not None
        else None
    )
    if found is None:
        raise _not_a_snapshot(str(store.shown()))
    return found


def _not_a_snapshot(path: str) -> InputError:
    return InputError(
        f"no petsync snapshot at {path} (expected a {PARTITION_KEY}=YYYY-MM-DD directory "
        f"holding {MANIFEST_NAME} and {PARQUET_NAME} of the same run); "
        "`petsync export --out DIR` writes them under DIR/pets"
    )


def read_table(info: SnapshotInfo) -> pa.Table:
    """The pets of one snapshot as an Arrow table with the snapshot schema, ordered by id.

    The file holds rows in the order they were fetched; sorting here gives notebooks and
    diffs a stable order. The file is read whole in one request, and its footer must name
    the manifest's run: a snapshot replaced while it was read is an error, never a mix.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from petsync.export.schema import conform

    if info.manifest.get("table_format") == "delta":
        from petsync.export.delta import read_delta

        return read_delta(info)
    if info.manifest.get("table_format") == "iceberg":
        from petsync.export.iceberg import read_iceberg

        return read_iceberg(info)
    if isinstance(info.parquet_path, Path):
        store = _Store.open(info.path)
        path = str(info.parquet_path.absolute())
    else:
        location = parse_location(info.parquet_path, what="snapshot")
        store = _Store.open(location)
        path = location.store_path
    try:
        table = pq.read_table(pa.BufferReader(store.read_bytes(path)))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {info.parquet_path}: {exc}") from exc
    metadata = table.schema.metadata or {}
    footer = metadata.get(RUN_ID_KEY)
    if info.run_id is not None and (footer or b"").decode("utf-8", "replace") != info.run_id:
        raise InputError(
            f"the snapshot of {info.date} at {info.path} was replaced while it was read; "
            "load it again"
        )
    try:
        return conform(table.replace_schema_metadata(None)).sort_by("id")
    except ValueError as exc:
        raise InputError(f"cannot read {info.parquet_path}: {exc}") from exc


def load_snapshot(
    directory: Path | str, date: str | dt.date | None = None, *, version: int | None = None
) -> pd.DataFrame:
    """Load one snapshot as a pandas DataFrame with exact dtypes.

    ``directory`` is the export's ``--out``: a local path or a URI (``s3://bucket/prefix``,
    ``gs://...``, ``abfs://...``), read with the store's standard credentials. By default
    the latest *complete* snapshot; pass ``date`` for a given day (complete or not; its
    manifest says). Columns: ``id`` and ``categoryId`` nullable ``Int64`` (exact int64,
    never float), ``name`` ``string``, ``status`` categorical over ``available``,
    ``pending``, ``sold`` plus any unknown value the API sent (null when it sent none).
    ``frame.attrs`` holds ``snapshot_date`` and the ``manifest``. For a Delta table
    (``--table-format delta``) ``version`` loads the snapshot a table version committed
    (time travel); the manifest then comes from that commit's metadata.

    >>> frame = load_snapshot("petsync-demo")                        # doctest: +SKIP
    >>> frame = load_snapshot("s3://archive/petsync", version=12)    # doctest: +SKIP
    >>> frame = load_snapshot("s3://archive/petsync", "2026-11-22")  # doctest: +SKIP
    >>> frame.status.value_counts()                                  # doctest: +SKIP
    """
    from petsync.export.schema import to_dataframe

    info: SnapshotInfo | None
    if version is not None:
        from petsync.export.delta import snapshot_at_version

        store = _Store.open(directory)
        if not _is_delta(store.location):
            raise InputError(
                f"version= reads a Delta table; {store.shown(PETS_DIR)} holds none "
                "(export with --table-format delta)"
            )
        info = snapshot_at_version(store.location, version)
    elif date is None:
        info = latest_snapshot(directory)
        if info is None:
            root = _Store.open(directory).shown(PETS_DIR)
            raise InputError(
                f"no complete snapshot under {root}; run "
                f"`petsync export --out {directory}` first, or pass date= to load an "
                "incomplete one"
            )
    else:
        info = find_snapshot(date if isinstance(date, dt.date) else str(date), directory=directory)
    assert info is not None
    frame = to_dataframe(read_table(info))
    frame.attrs["snapshot_date"] = info.date.isoformat()
    frame.attrs["manifest"] = info.manifest
    return frame
