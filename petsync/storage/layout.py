"""Where a snapshot's files live and what they are called: the layout every writer and
reader of snapshots shares.

One export run makes one snapshot partition, named by its UTC date::

    DIR/
      .petsync.lock                    the run lock (see petsync.storage.lock)
      .petsync-tmp/                    staging area; leftovers of a killed run are removed
      pets/
        snapshot_date=2026-11-22/
          pets.parquet                 the pets (zstd), the one schema of the snapshots
          _pets.csv                    the same rows as CSV (unless --format parquet)
          _quarantine.jsonl            records that broke the interface, one JSON per line
          _manifest.json               counts, completeness, provenance; written last
        snapshot_date=2026-11-23/      a flagged snapshot (exit 4: incomplete, or a drop)
          _pets.parquet.flagged        its pets: the same Parquet, under a name readers skip
          _pets.csv.flagged            its CSV, flagged too
          ...

Files whose names start with ``_`` or ``.`` are skipped by pyarrow's dataset discovery, so
``pandas.read_parquet("DIR/pets")`` reads every ``pets.parquet`` as one table with
``snapshot_date`` as a column, and the ``DIR/pets/*/*.parquet`` glob of DuckDB and polars
matches only them. Only a trusted snapshot (complete, no suspicious drop) names its data
``pets.parquet``: a flagged one keeps its rows in :data:`FLAGGED_PARQUET_NAME`, which neither
the discovery nor the glob reads, so those readers see trusted nights only, with no filter to
forget. Its manifest names the file (``files.parquet``).

Which partitions are published is :mod:`.partitions`; publishing them is
:mod:`.local_publication` and :mod:`.object_publication`. The table formats above this floor
(dated folders, Delta, Iceberg) read and write snapshots with these names.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PETS_DIR = "pets"
PARTITION_KEY = "snapshot_date"
PARQUET_NAME = "pets.parquet"
# A flagged snapshot's data: starts with "_" (pyarrow's discovery skips it) and does not end
# in ".parquet" (the */*.parquet glob of DuckDB and polars skips it). Its CSV is flagged too.
FLAGGED_SUFFIX = ".flagged"
FLAGGED_PARQUET_NAME = f"_{PARQUET_NAME}{FLAGGED_SUFFIX}"
DATA_NAMES = (PARQUET_NAME, FLAGGED_PARQUET_NAME)
CSV_NAME = "_pets.csv"
FLAGGED_CSV_NAME = CSV_NAME + FLAGGED_SUFFIX
QUARANTINE_NAME = "_quarantine.jsonl"
MANIFEST_NAME = "_manifest.json"
STAGING_DIR = ".petsync-tmp"
RUN_ID_KEY = b"petsync.run_id"  # in the Parquet footer's key-value metadata

_PARTITION_RE = re.compile(rf"^{PARTITION_KEY}=(\d{{4}}-\d{{2}}-\d{{2}})$")


def data_name(trusted: bool) -> str:
    """The name of a snapshot's Parquet file: readers of ``pets/`` see trusted ones only.

    >>> data_name(True), data_name(False)
    ('pets.parquet', '_pets.parquet.flagged')
    """
    return PARQUET_NAME if trusted else FLAGGED_PARQUET_NAME


def csv_name(trusted: bool) -> str:
    """The name of a snapshot's CSV: a ``_pets.csv`` glob finds trusted ones only.

    >>> csv_name(True), csv_name(False)
    ('_pets.csv', '_pets.csv.flagged')
    """
    return CSV_NAME if trusted else FLAGGED_CSV_NAME


def manifest_data_name(manifest: dict[str, Any]) -> str:
    """The Parquet file a manifest names (``files.parquet``), one of :data:`DATA_NAMES`."""
    files = manifest.get("files")
    name = files.get("parquet") if isinstance(files, dict) else None
    return name if name in DATA_NAMES else PARQUET_NAME


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
    def drop_flagged(self) -> bool:
        """True when the pet count fell by more than ``--max-drop`` (or to zero)."""
        check = self.manifest.get("drop_check")
        return isinstance(check, dict) and check.get("flagged") is True

    @property
    def trusted(self) -> bool:
        """Complete and no suspicious drop: what the export exits 0 for."""
        return self.complete and not self.drop_flagged

    @property
    def flag_reasons(self) -> list[str]:
        """Why the snapshot is not trusted, from its manifest (empty when it is)."""
        reasons: list[str] = []
        if not self.complete:
            found = self.manifest.get("incomplete_reasons")
            listed = [str(r) for r in found] if isinstance(found, list) else []
            reasons.append("incomplete: " + ("; ".join(listed) or "complete is not true"))
        if self.drop_flagged:
            check = self.manifest.get("drop_check")
            reason = check.get("reason") if isinstance(check, dict) else None
            reasons.append(f"suspicious drop: {reason or 'flagged'}")
        return reasons

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
        """The snapshot's Parquet file: ``pets.parquet``, or a flagged one's hidden name."""
        name = manifest_data_name(self.manifest)
        if isinstance(self.path, Path):
            return self.path / name
        return f"{self.path}/{name}"


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
