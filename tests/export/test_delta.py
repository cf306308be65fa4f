"""--table-format delta: one Delta Lake table, one atomic commit per night, locally and on S3.

What an export does the same way into Delta and Iceberg is tests/formats/test_table_exports.py;
here, what only Delta has: its version numbers, time travel, its readers and partitioning.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError
from petsync.core.models import Pet
from petsync.export.config import ExportConfig
from petsync.export.outcome import ExportReport
from petsync.export.run import run_export
from petsync.formats.delta import storage_options
from petsync.formats.snapshots import list_snapshots, load_snapshot
from petsync.formats.table_steps import MANIFEST_KEY
from petsync.storage.location import parse_location
from tests.conftest import S3Bucket
from tests.export.scripted import BASE, ScriptedClient
from tests.formats.table_nights import DAY1, DAY2, NIGHT1, NIGHT2, export_to, ids


def export(out: str, pets: list[Pet], today: dt.date, **options: Any) -> ExportReport:
    return export_to("delta", out, pets, today, **options)


def round_trip(out: str) -> None:
    first = export(out, NIGHT1, DAY1)
    second = export(out, NIGHT2, DAY2)

    assert (first.table_version, second.table_version) == (0, 1)
    frame = load_snapshot(out)
    assert frame.attrs["snapshot_date"] == "2026-11-21"
    assert frame["id"].tolist() == ids(NIGHT2) and str(frame["id"].dtype) == "Int64"
    assert load_snapshot(out, "2026-11-20")["id"].tolist() == ids(NIGHT1)  # exact at the edges
    travelled = load_snapshot(out, version=0)
    assert travelled.attrs["snapshot_date"] == "2026-11-20"
    assert travelled.attrs["manifest"]["pets"] == 3
    assert [(s.date, s.pets) for s in list_snapshots(out)] == [(DAY1, 3), (DAY2, 2)]

    # The same night again: one commit replaces that date's partition, nothing else.
    again = export(out, NIGHT1, DAY2)
    assert again.table_version == 2
    assert load_snapshot(out)["id"].tolist() == ids(NIGHT1)
    assert load_snapshot(out, version=1)["id"].tolist() == ids(NIGHT2)  # time travel
    assert load_snapshot(out, "2026-11-20")["id"].tolist() == ids(NIGHT1)


def test_delta_round_trip_locally_with_a_second_night_a_rerun_and_time_travel(
    tmp_path: Path,
) -> None:
    out = str(tmp_path / "out")
    round_trip(out)

    table = DeltaTable(f"{out}/pets")
    assert table.metadata().partition_columns == ["snapshot_date"]
    manifest = json.loads(table.history(1)[0][MANIFEST_KEY])
    assert manifest["snapshot_date"] == "2026-11-21" and manifest["complete"] is True


def test_delta_round_trip_on_s3_read_by_pandas_and_polars(s3: S3Bucket) -> None:
    import polars as pl

    round_trip(s3.uri())

    options = storage_options(parse_location(s3.uri()))
    table = DeltaTable(f"{s3.uri()}/pets", storage_options=options)
    frame = table.to_pandas(filters=[("snapshot_date", "=", DAY2)])
    assert sorted(frame["id"].tolist()) == ids(NIGHT1)
    polars = pl.read_delta(f"{s3.uri()}/pets", storage_options=options)
    assert sorted(polars.filter(pl.col("snapshot_date") == DAY1)["id"].to_list()) == ids(NIGHT1)


def another_table(out: Path, *, partition_by: list[str] | None) -> None:
    other = pa.table(
        {
            "id": pa.array([1], pa.int64()),
            "name": ["x"],
            "categoryId": pa.array([1], pa.int64()),
            "status": ["sold"],
            "snapshot_date": pa.array([DAY1], pa.date32()),
        }
    )
    write_deltalake(str(out / "pets"), other, partition_by=partition_by)


def test_a_table_not_partitioned_by_the_date_is_refused_before_any_request(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    another_table(out, partition_by=None)
    client = ScriptedClient(NIGHT1)
    config = ExportConfig(
        client=ClientConfig(BASE, ApiKey("k")), out_dir=str(out), table_format="delta"
    )

    with pytest.raises(ConfigError) as caught:
        run_export(config, client=client, today=DAY2)

    assert str(caught.value) == (
        f"the Delta table at {out / 'pets'} is not a petsync snapshot table: it is "
        "partitioned by nothing, petsync's by snapshot_date. petsync never changes or casts "
        "a table's schema: export to another out_dir=, or move the table away. Nothing was "
        "fetched."
    )
    assert client.requests == 0
    assert DeltaTable(str(out / "pets")).version() == 0
