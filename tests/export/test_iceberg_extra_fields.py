"""``--table-format iceberg --extra-fields keep``: the Iceberg table grows by adding columns.

End to end against the reference server (``Faults.extra_fields``, switched per night), the
Iceberg twins of the Delta cases in test_extra_fields.py: new kept fields become optional
columns after the known ones in the night's commit, null in the nights before; a changed
type is refused before the commit (exit 2); ``load_snapshot(s)``, ``list_snapshots`` and
``diff`` read the extra columns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from petsync.core.errors import ConfigError
from petsync.export.outcome import ExportReport
from petsync.formats.iceberg import open_catalog
from petsync.formats.snapshots import list_snapshots, load_snapshot, load_snapshots
from petsync.history.diff import diff_snapshots
from petsync.server.extra_fields import extra_fields as demo_fields
from petsync.storage.location import parse_location
from tests.export.test_extra_fields import NIGHTS, PETS, night, sends

pytest.importorskip("pyiceberg")


@pytest.fixture
def server(petstore_server: Any) -> Any:
    return petstore_server(seed_pets=PETS)


def iceberg(server: Any, out: Path, n: int, **options: Any) -> ExportReport:
    return night(server, out, n, extra_fields="keep", table_format="iceberg", **options)


def table_of(out: Path) -> Any:
    return open_catalog(parse_location(str(out))).load_table(("petsync", "pets"))


def columns_of(table: Any) -> list[tuple[str, str, bool]]:
    return [(f.name, str(f.field_type), f.required) for f in table.schema().fields]


KNOWN = [
    ("id", "long", True),
    ("name", "string", True),
    ("categoryId", "long", True),
    ("status", "string", False),
    ("snapshot_date", "date", True),
]


def test_a_new_field_becomes_an_optional_column_null_in_the_nights_before(
    server: Any, tmp_path: Path
) -> None:
    iceberg(server, tmp_path, 0)
    sends(server, lambda i: {"tag": "calm"})

    report = iceberg(server, tmp_path, 1)

    assert report.exit_code == 0
    table = table_of(tmp_path)
    assert columns_of(table) == [*KNOWN, ("tag", "string", False)]
    # The column and the night arrive in one commit: the night before reads without it.
    first, second = (s.manifest["table_version"] for s in list_snapshots(tmp_path))
    assert table.current_snapshot().snapshot_id == second == report.table_version
    assert "tag" not in table.scan(snapshot_id=first).to_arrow().column_names
    rows = table.scan(selected_fields=("snapshot_date", "tag")).to_arrow().to_pylist()
    tags = {(str(r["snapshot_date"]), r["tag"]) for r in rows}
    assert tags == {("2026-11-20", None), ("2026-11-21", "calm")}
    frame = load_snapshots(tmp_path)
    assert list(frame.columns) == ["snapshot_date", "id", "name", "categoryId", "status", "tag"]
    assert frame.groupby(frame.snapshot_date.dt.strftime("%Y-%m-%d"))["tag"].count().to_dict() == {
        "2026-11-20": 0,
        "2026-11-21": PETS,
    }
    assert [(s.date, s.pets) for s in list_snapshots(tmp_path)] == [
        (NIGHTS[0], PETS),
        (NIGHTS[1], PETS),
    ]


def test_each_column_type_lands_typed_and_exact(server: Any, tmp_path: Path) -> None:
    sends(server, lambda i: {**demo_fields(i), "serial": 2**63 - i})

    iceberg(server, tmp_path, 0)

    assert columns_of(table_of(tmp_path)) == [
        *KNOWN,
        ("birthDate", "string", False),
        ("owner", "string", False),
        ("serial", "long", False),
        ("tag", "string", False),
        ("vaccinated", "boolean", False),
        ("weightKg", "double", False),
    ]
    frame = load_snapshot(tmp_path).set_index("id")
    assert list(frame.columns)[3:] == [
        "birthDate",
        "owner",
        "serial",
        "tag",
        "vaccinated",
        "weightKg",
    ]
    assert json.loads(frame.loc[14, "owner"]) == demo_fields(14)["owner"]
    assert frame.loc[20, "weightKg"] == demo_fields(20)["weightKg"]
    assert bool(frame.loc[8, "vaccinated"]) is True
    assert str(frame["serial"].dtype) == "Int64" and frame.loc[1, "serial"] == 2**63 - 1


def test_a_kept_column_the_night_lacks_stays_and_a_rerun_replaces_the_night(
    server: Any, tmp_path: Path
) -> None:
    sends(server, lambda i: {"tag": "calm"})
    iceberg(server, tmp_path, 0)
    sends(server, lambda i: {"colour": "red"})
    iceberg(server, tmp_path, 1)
    iceberg(server, tmp_path, 1)  # the same night again: its date replaced, no new column

    assert [n for n, _, _ in columns_of(table_of(tmp_path))][5:] == ["tag", "colour"]
    tonight = load_snapshot(tmp_path)
    assert len(tonight) == PETS
    # The night reads back with the columns it kept, as its Parquet snapshot would.
    assert list(tonight.columns)[4:] == ["colour"] and (tonight["colour"] == "red").all()
    assert table_of(tmp_path).scan(row_filter="tag IS NOT NULL").to_arrow().num_rows == PETS
    before = load_snapshot(tmp_path, NIGHTS[0].isoformat())
    assert list(before.columns)[4:] == ["tag"] and (before["tag"] == "calm").all()


def test_a_changed_type_is_refused_before_the_commit(server: Any, tmp_path: Path) -> None:
    sends(server, lambda i: {"tag": "calm"})
    iceberg(server, tmp_path, 0)
    # A night that drops the field forgets its type; the table does not.
    night(server, tmp_path, 1, table_format="iceberg")
    sends(server, lambda i: {"tag": i})
    commits = len(table_of(tmp_path).snapshots())

    with pytest.raises(ConfigError) as caught:
        iceberg(server, tmp_path, 2)

    message = str(caught.value)
    assert caught.value.exit_code == 2
    assert message.startswith(
        f"the Iceberg table at {tmp_path / 'pets'} cannot take tonight's extra fields: "
        "column tag is string, tonight's values are int64."
    )
    assert message.endswith("Nothing was committed.")
    assert len(table_of(tmp_path).snapshots()) == commits
    assert [s.date for s in list_snapshots(tmp_path)] == NIGHTS[:2]


def test_a_field_named_like_a_column_in_another_case_is_refused(
    server: Any, tmp_path: Path
) -> None:
    sends(server, lambda i: {"tag": "calm"})
    iceberg(server, tmp_path, 0)
    sends(server, lambda i: {"Tag": "calm"})

    with pytest.raises(ConfigError, match="column tag exists, tonight's field Tag differs only"):
        iceberg(server, tmp_path, 1)

    assert [n for n, _, _ in columns_of(table_of(tmp_path))][5:] == ["tag"]


def test_a_table_whose_kept_column_was_retyped_outside_petsync_is_refused(
    server: Any, tmp_path: Path
) -> None:
    from pyiceberg.types import DecimalType

    sends(server, lambda i: {"weightKg": 1.5})
    iceberg(server, tmp_path, 0)
    table = table_of(tmp_path)
    with table.update_schema() as update:
        update.add_column("price", DecimalType(9, 2))

    with pytest.raises(ConfigError) as caught:
        iceberg(server, tmp_path, 1)

    assert "an extra column price (decimal128(9, 2))" in str(caught.value)
    assert str(caught.value).endswith("Nothing was fetched.")


@pytest.mark.parametrize("table_format", ["iceberg", "delta"])
def test_diff_reports_fields_that_appeared_or_disappeared_and_changed_values(
    server: Any, tmp_path: Path, table_format: str
) -> None:
    # A table holds every column kept so far; a night reads back with those it kept.
    options = {"extra_fields": "keep", "table_format": table_format}
    sends(server, lambda i: {"tag": "calm", "age": 1})
    night(server, tmp_path, 0, **options)
    sends(server, lambda i: {"tag": "shy" if i in (3, 4) else "calm", "colour": "red"})
    night(server, tmp_path, 1, **options)

    result = diff_snapshots(NIGHTS[0], NIGHTS[1], directory=tmp_path)

    assert result.fields_appeared == ("colour",) and result.fields_disappeared == ("age",)
    assert result.field_changes == {"tag": 2}


def test_the_export_command_keeps_extra_fields_in_an_iceberg_table(
    server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from petsync.cli import cli

    monkeypatch.chdir(tmp_path)
    sends(server, lambda i: {"tag": "calm"})
    out = tmp_path / "out"
    env = {"PETSYNC_API_KEY": server.api_key.reveal(), "HOME": str(tmp_path)}
    args = ["export", "--base-url", server.base_url, "--out", str(out)]

    result = CliRunner().invoke(
        cli, [*args, "--table-format", "iceberg", "--extra-fields", "keep"], env=env
    )

    assert result.exit_code == 0, result.stderr
    assert [n for n, _, _ in columns_of(table_of(out))][5:] == ["tag"]
    assert (load_snapshot(out)["tag"] == "calm").all()


def test_polars_and_duckdb_read_the_grown_table(
    server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import duckdb
    import polars as pl

    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")
    iceberg(server, tmp_path, 0)
    sends(server, lambda i: {"weightKg": 2.5})
    iceberg(server, tmp_path, 1)
    table = table_of(tmp_path)

    frame = pl.scan_iceberg(table).group_by("snapshot_date").agg(pl.col("weightKg").sum())
    sums = dict(frame.sort("snapshot_date").collect().iter_rows())
    assert sums == {NIGHTS[0]: 0.0, NIGHTS[1]: 2.5 * PETS}
    connection = duckdb.connect()
    connection.register("nights", table.scan().to_arrow())
    rows = connection.sql(
        "SELECT snapshot_date, count(weightKg) FROM nights GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert rows == [(NIGHTS[0], 0), (NIGHTS[1], PETS)]
