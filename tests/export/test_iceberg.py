"""``--table-format iceberg``: one Iceberg table at OUT/pets in an embedded SQLite catalog.

Run with the real pyiceberg (SQL catalog on SQLite, files on the local disk): nights, a
re-run replacing its date, the manifest in the snapshot summary, exact int64 ids,
``load_snapshot`` and ``diff``; the table read back by pyiceberg, Polars and DuckDB as
docs/notebooks.md shows; the catalog. What an export does the same way into Delta and
Iceberg is tests/formats/test_table_exports.py.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.core.errors import ConfigError
from petsync.core.models import Pet
from petsync.export.outcome import ExportReport
from petsync.formats.iceberg import CATALOG_FILE, open_catalog
from petsync.formats.snapshots import list_snapshots, load_snapshot
from petsync.formats.table_steps import MANIFEST_KEY
from petsync.history.diff import diff_snapshots
from petsync.storage.location import parse_location
from tests.conftest import S3Bucket
from tests.formats.table_nights import DAY1, DAY2, NIGHT1, NIGHT2, export_to, ids


def export(out: str, pets: list[Pet], today: dt.date, **options: Any) -> ExportReport:
    return export_to("iceberg", out, pets, today, **options)


def table_of(out: str) -> Any:
    return open_catalog(parse_location(out)).load_table(("petsync", "pets"))


def test_nights_a_rerun_and_the_manifest_in_the_snapshot_summary(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    first = export(out, NIGHT1, DAY1)
    second = export(out, NIGHT2, DAY2)

    assert (tmp_path / "out" / CATALOG_FILE).is_file()
    assert first.snapshot_path == str(tmp_path / "out" / "pets")
    frame = load_snapshot(out)
    assert frame.attrs["snapshot_date"] == "2026-11-21"
    assert frame["id"].tolist() == ids(NIGHT2) and str(frame["id"].dtype) == "Int64"
    assert load_snapshot(out, "2026-11-20")["id"].tolist() == ids(NIGHT1)  # exact at the edges
    assert [(s.date, s.pets) for s in list_snapshots(out)] == [(DAY1, 3), (DAY2, 2)]
    table = table_of(out)
    summary = table.current_snapshot().summary.additional_properties
    assert json.loads(summary[MANIFEST_KEY])["run_id"] == second.run_id
    assert [str(f.transform) for f in table.spec().fields] == ["identity"]

    again = export(out, NIGHT1, DAY2)  # the same night again: only its date is replaced

    assert load_snapshot(out)["id"].tolist() == ids(NIGHT1)
    assert load_snapshot(out, "2026-11-20")["id"].tolist() == ids(NIGHT1)
    assert again.table_version == table_of(out).current_snapshot().snapshot_id
    travelled = table_of(out).scan(snapshot_id=second.table_version).to_arrow()
    assert sorted(travelled.column("id").to_pylist()) == sorted(ids(NIGHT1) + ids(NIGHT2))


def test_pyiceberg_polars_and_duckdb_read_the_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb
    import polars as pl

    # Polars plans the scan with pyiceberg (its faster planner is another package).
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")
    out = str(tmp_path / "out")
    export(out, NIGHT1, DAY1)
    export(out, NIGHT2, DAY2)
    table = table_of(out)

    arrow = table.scan(row_filter="snapshot_date = '2026-11-21'").to_arrow()
    assert sorted(arrow.column("id").to_pylist()) == ids(NIGHT2)
    assert arrow.schema.field("id").type == pa.int64()
    frame = pl.scan_iceberg(table).filter(pl.col("snapshot_date") == DAY1).collect()
    assert sorted(frame["id"].to_list()) == ids(NIGHT1)
    connection = duckdb.connect()  # DuckDB queries the Arrow table pyiceberg reads
    connection.register("nights", table.scan().to_arrow())
    rows = connection.sql(
        "SELECT snapshot_date, count(*) FROM nights GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert rows == [(DAY1, 3), (DAY2, 2)]


def test_diff_and_the_diff_command_read_the_table(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    export(out, NIGHT1, DAY1)
    export(out, NIGHT2, DAY2)

    result = diff_snapshots("2026-11-20", "2026-11-21", directory=out)
    shown = CliRunner().invoke(cli, ["diff", "2026-11-20", "2026-11-21", "--dir", out])

    assert (result.added, result.removed) == (1, 2)
    assert shown.exit_code == 0, shown.output


def test_an_object_store_out_needs_a_named_catalog() -> None:
    with pytest.raises(ConfigError) as caught:
        open_catalog(parse_location("gs://archive/petsync"), {})

    assert str(caught.value).startswith(
        "table_format='iceberg' on gs://archive/petsync needs a shared catalog: set "
        "PETSYNC_ICEBERG_CATALOG to the name of a catalog in pyiceberg's configuration"
    )


def test_on_an_object_store_with_a_catalog_named_in_pyicebergs_configuration(
    s3: S3Bucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A SQL catalog on SQLite stands in for a team's shared one (REST, Glue, PostgreSQL):
    # what matters is that petsync takes the catalog pyiceberg's configuration names.
    prefix = "PYICEBERG_CATALOG__LAKE__"
    monkeypatch.setenv(f"{prefix}TYPE", "sql")
    monkeypatch.setenv(f"{prefix}URI", f"sqlite:///{tmp_path / 'catalog.db'}")
    monkeypatch.setenv(f"{prefix}S3__ENDPOINT", s3.endpoint)
    monkeypatch.setenv(f"{prefix}S3__REGION", "us-east-1")
    monkeypatch.setenv("PETSYNC_ICEBERG_CATALOG", "lake")
    out = s3.uri("petsync-iceberg")

    export(out, NIGHT1, DAY1)
    export(out, NIGHT2, DAY2)

    assert [(s.date, s.pets) for s in list_snapshots(out)] == [(DAY1, 3), (DAY2, 2)]
    assert load_snapshot(out)["id"].tolist() == ids(NIGHT2)
    assert any(k.startswith("petsync-iceberg/pets/metadata/") for k in s3.object_keys())
