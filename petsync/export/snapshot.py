"""Snapshot layout on disk: staging, atomic publication, listing, loading and pruning.

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

A snapshot is written whole into ``DIR/.petsync-tmp/<unique>/`` (same filesystem), each file
fsynced, the manifest last, and then renamed into ``DIR/pets/`` in one step; replacing the
same day's snapshot swaps the two directories atomically (``renameat2(RENAME_EXCHANGE)`` on
Linux). A run that dies at any point leaves the published snapshots as they were.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime as dt
import json
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from petsync.core.errors import InputError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

PETS_DIR = "pets"
PARTITION_KEY = "snapshot_date"
PARQUET_NAME = "pets.parquet"
CSV_NAME = "_pets.csv"
QUARANTINE_NAME = "_quarantine.jsonl"
MANIFEST_NAME = "_manifest.json"
STAGING_DIR = ".petsync-tmp"

_PARTITION_RE = re.compile(rf"^{PARTITION_KEY}=(\d{{4}}-\d{{2}}-\d{{2}})$")


@dataclass(frozen=True)
class SnapshotInfo:
    """A published snapshot: its date, its partition directory and its manifest."""

    date: dt.date
    path: Path
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
    def parquet_path(self) -> Path:
        return self.path / PARQUET_NAME


def pets_root(directory: Path) -> Path:
    return Path(directory) / PETS_DIR


def partition_path(directory: Path, date: dt.date) -> Path:
    """Where the snapshot of ``date`` lives under ``directory``."""
    return pets_root(directory) / f"{PARTITION_KEY}={date.isoformat()}"


def list_snapshots(directory: Path | str) -> list[SnapshotInfo]:
    """Every published snapshot under ``directory``, oldest first, with its manifest.

    A partition without a readable manifest is not a petsync snapshot and is skipped.

    >>> [(s.date.isoformat(), s.complete, s.pets) for s in list_snapshots("out")]  # doctest: +SKIP
    [('2026-11-21', True, 10000), ('2026-11-22', True, 10012)]
    """
    root = pets_root(Path(directory))
    if not root.is_dir():
        return []
    found: list[SnapshotInfo] = []
    for entry in root.iterdir():
        match = _PARTITION_RE.match(entry.name)
        if not match or not entry.is_dir():
            continue
        try:
            date = dt.date.fromisoformat(match.group(1))
            manifest = json.loads((entry / MANIFEST_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(manifest, dict):
            found.append(SnapshotInfo(date=date, path=entry, manifest=manifest))
    return sorted(found, key=lambda info: info.date)


def latest_snapshot(directory: Path, *, complete_only: bool = True) -> SnapshotInfo | None:
    """The newest snapshot (the newest complete one unless ``complete_only`` is False)."""
    snapshots = [s for s in list_snapshots(directory) if s.complete or not complete_only]
    return snapshots[-1] if snapshots else None


def find_snapshot(ref: str | Path | dt.date, *, directory: Path | None = None) -> SnapshotInfo:
    """Resolve a snapshot reference: a date (``2026-11-22``) under ``directory``, or a path.

    A path may be a partition directory or the ``pets.parquet`` inside one. Raises
    :class:`InputError` naming what was looked for.
    """
    if isinstance(ref, dt.date):
        date: dt.date | None = ref
    else:
        try:
            date = dt.date.fromisoformat(str(ref))
        except ValueError:
            date = None
    if date is not None:
        base = Path(directory) if directory is not None else Path(".")
        path = partition_path(base, date)
    else:
        path = Path(str(ref))
        if path.is_file():
            path = path.parent
    match = _PARTITION_RE.match(path.name)
    manifest_file = path / MANIFEST_NAME
    if not match or not manifest_file.is_file():
        raise InputError(
            f"no petsync snapshot at {path} (expected a {PARTITION_KEY}=YYYY-MM-DD directory "
            f"holding {MANIFEST_NAME}); `petsync export --out DIR` writes them under DIR/pets"
        )
    try:
        manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the snapshot manifest {manifest_file}: {exc}") from exc
    return SnapshotInfo(dt.date.fromisoformat(match.group(1)), path, manifest)


def read_table(info: SnapshotInfo) -> pa.Table:
    """The pets of one snapshot as an Arrow table with the snapshot schema, ordered by id.

    The file holds rows in the order they were fetched; sorting here gives notebooks and
    diffs a stable order.
    """
    import pyarrow.parquet as pq

    from petsync.export.schema import conform

    try:
        return conform(pq.read_table(info.parquet_path)).sort_by("id")
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {info.parquet_path}: {exc}") from exc


def load_snapshot(directory: Path | str, date: str | dt.date | None = None) -> pd.DataFrame:
    """Load one snapshot as a pandas DataFrame with exact dtypes.

    By default the latest *complete* snapshot; pass ``date`` for a given day (complete or
    not; its manifest says). Columns: ``id`` and ``categoryId`` nullable ``Int64`` (exact
    int64, never float), ``name`` ``string``, ``status`` categorical over ``available``,
    ``pending``, ``sold`` plus any unknown value the API sent (null when it sent none).
    ``frame.attrs`` holds ``snapshot_date`` and the ``manifest``.

    >>> frame = load_snapshot("petsync-demo")                        # doctest: +SKIP
    >>> frame.status.value_counts()                                  # doctest: +SKIP
    """
    from petsync.export.schema import to_dataframe

    directory = Path(directory)
    if date is None:
        info = latest_snapshot(directory)
        if info is None:
            raise InputError(
                f"no complete snapshot under {pets_root(directory)}; run "
                f"`petsync export --out {directory}` first, or pass date= to load an "
                "incomplete one"
            )
    else:
        info = find_snapshot(date if isinstance(date, dt.date) else str(date), directory=directory)
    frame = to_dataframe(read_table(info))
    frame.attrs["snapshot_date"] = info.date.isoformat()
    frame.attrs["manifest"] = info.manifest
    return frame


class StagedSnapshot:
    """A snapshot being written aside, published in one rename or discarded.

    >>> staged = StagedSnapshot.create(Path("out"))                 # doctest: +SKIP
    >>> staged.write_text(MANIFEST_NAME, "{}")                      # doctest: +SKIP
    >>> staged.publish(dt.date(2026, 11, 22))                       # doctest: +SKIP
    """

    def __init__(self, directory: Path, path: Path) -> None:
        self.directory = directory
        self.path = path

    @classmethod
    def create(cls, directory: Path) -> StagedSnapshot:
        staging = Path(directory) / STAGING_DIR
        staging.mkdir(parents=True, exist_ok=True)
        path = staging / uuid.uuid4().hex
        path.mkdir()
        return cls(Path(directory), path)

    def file(self, name: str) -> Path:
        return self.path / name

    def write_text(self, name: str, text: str) -> Path:
        """Write a small text file and fsync it."""
        target = self.path / name
        with open(target, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        return target

    def publish(self, date: dt.date) -> Path:
        """Move the staged snapshot into place as the snapshot of ``date``; return its path.

        Every file is fsynced first, so the rename never exposes a file that a crash could
        leave empty. An existing snapshot of the same date is swapped out atomically and
        then removed.
        """
        for entry in self.path.iterdir():
            fsync_path(entry)
        fsync_path(self.path)
        root = pets_root(self.directory)
        root.mkdir(parents=True, exist_ok=True)
        target = partition_path(self.directory, date)
        if target.exists():
            _exchange(self.path, target)
            # self.path now holds the replaced snapshot: remove it.
            shutil.rmtree(self.path, ignore_errors=True)
        else:
            os.rename(self.path, target)
        fsync_path(root)
        return target

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def clean_staging(directory: Path) -> list[Path]:
    """Remove what killed runs left in the staging area; call only while holding the lock."""
    staging = Path(directory) / STAGING_DIR
    removed: list[Path] = []
    if staging.is_dir():
        for entry in staging.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


def prune_snapshots(directory: Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` snapshots; return the removed partitions.

    Each is first renamed into the staging area (one atomic step out of the readers' view)
    and then deleted, so a reader never sees half a partition.
    """
    if keep < 1:
        raise ValueError("keep must be at least 1")
    snapshots = list_snapshots(directory)
    removed: list[Path] = []
    for info in snapshots[: max(0, len(snapshots) - keep)]:
        aside = StagedSnapshot.create(directory).path
        os.rename(info.path, aside / info.path.name)
        shutil.rmtree(aside, ignore_errors=True)
        removed.append(info.path)
    if removed:
        fsync_path(pets_root(directory))
    return removed


def fsync_path(path: Path) -> None:
    """fsync a file or directory so a rename after it cannot expose lost data."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> None:
    """Swap two directories in one atomic step, or fall back to two renames.

    ``renameat2(..., RENAME_EXCHANGE)`` exists on Linux 3.15+ and most local filesystems.
    Where it does not, the old directory is renamed aside and the new one into place: a
    crash between the two leaves that day without a snapshot (earlier days untouched).
    """
    libc_name = ctypes.util.find_library("c")
    if libc_name:
        libc = ctypes.CDLL(libc_name, use_errno=True)
        renameat2 = getattr(libc, "renameat2", None)
        if renameat2 is not None:
            result = renameat2(
                _AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE
            )
            if result == 0:
                return
    aside = a.parent / f"{a.name}.old"
    os.rename(b, aside)
    os.rename(a, b)
    os.rename(aside, a)
