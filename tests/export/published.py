"""Publish a crafted snapshot the way an export does, for the tests that read snapshots."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from petsync.export.publish import StagedSnapshot
from petsync.export.schema import PET_SCHEMA
from petsync.export.snapshot import MANIFEST_NAME, PARQUET_NAME

Row = tuple[int, str, int, str | None]


def publish_snapshot(
    directory: Path, date: dt.date, rows: Sequence[Row], *, complete: bool = True
) -> Path:
    """Stage ``rows`` (id, name, categoryId, status) with a minimal manifest; publish them."""
    staged = StagedSnapshot.create(directory)
    table = pa.Table.from_pylist(
        [dict(zip(("id", "name", "categoryId", "status"), r, strict=True)) for r in rows],
        schema=PET_SCHEMA,
    )
    pq.write_table(table, staged.file(PARQUET_NAME), compression="zstd")
    staged.write_text(MANIFEST_NAME, json.dumps({"complete": complete, "pets": len(rows)}))
    return staged.publish(date)
