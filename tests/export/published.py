"""Publish a crafted snapshot the way an export does, for the tests that read snapshots."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from petsync.formats.schema import PET_SCHEMA
from petsync.storage.layout import MANIFEST_NAME, PARQUET_NAME
from petsync.storage.local_publication import StagedSnapshot

Row = tuple[int, str, int, str | None]


def publish_snapshot(
    directory: Path,
    date: dt.date,
    rows: Sequence[Row],
    *,
    complete: bool = True,
    drop_check: dict[str, object] | None = None,
) -> Path:
    """Stage ``rows`` (id, name, categoryId, status) with a minimal manifest; publish them.

    The data keeps the name ``pets.parquet`` whatever the manifest says (its ``files`` key
    is left out), as a snapshot written before flagged data had a name of its own.
    """
    staged = StagedSnapshot.create(directory)
    table = pa.Table.from_pylist(
        [dict(zip(("id", "name", "categoryId", "status"), r, strict=True)) for r in rows],
        schema=PET_SCHEMA,
    )
    pq.write_table(table, staged.file(PARQUET_NAME), compression="zstd")
    manifest: dict[str, object] = {"complete": complete, "pets": len(rows)}
    if drop_check is not None:
        manifest["drop_check"] = drop_check
    staged.write_text(MANIFEST_NAME, json.dumps(manifest))
    return staged.publish(date)
