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

How a snapshot gets there (staged aside, then renamed into place in one step) is
:mod:`petsync.export.publish`; this module only reads what is published.
"""

from __future__ import annotations

import datetime as dt
import json
import re
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
