"""Fields beyond the interface's: noticed, recorded, dropped, kept or refused, night by night.

End to end against the reference server (``Faults.extra_fields``, switched per night), plus
the column-type rules as tables.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from petsync.client.config import ClientConfig
from petsync.client.records import typed_records
from petsync.core.errors import ConfigError, PetsyncError
from petsync.core.models import PetStatus
from petsync.export.collector import PetCollector, source_of
from petsync.export.config import ExportConfig
from petsync.export.extra_fields import (
    EXAMPLE_MAX_CHARS,
    ColumnType,
    FieldTally,
    choose_column,
    fits,
)
from petsync.export.outcome import ExportReport
from petsync.export.run import run_export
from petsync.formats.snapshots import list_snapshots, load_snapshot, load_snapshots
from petsync.history.diff import diff_snapshots
from petsync.server.extra_fields import extra_fields as demo_fields
from petsync.storage.layout import (
    CSV_NAME,
    MANIFEST_NAME,
    PARQUET_NAME,
    QUARANTINE_NAME,
    partition_path,
)

NIGHTS = [dt.date(2026, 11, 20) + dt.timedelta(days=n) for n in range(4)]
PETS = 120  # ids 1..120: tag on 40, birthDate on 60, weightKg on 24, vaccinated 30, owner 17


def carrying(name: str) -> int:
    return sum(1 for i in range(1, PETS + 1) if name in demo_fields(i))


@pytest.fixture
def server(petstore_server: Any) -> Any:
    return petstore_server(seed_pets=PETS)


def night(server: Any, out: Path, n: int, **options: Any) -> ExportReport:
    config = ExportConfig(
        client=ClientConfig(server.base_url, server.api_key), out_dir=out, **options
    )
    return run_export(config, today=NIGHTS[n])


def sends(server: Any, fields: Callable[[int], dict[str, Any]] | None) -> None:
    """Switch what the server sends beyond the interface (None: nothing)."""
    server.config.faults.extra_fields = fields is not None
    if fields is not None:
        server.config.faults.extra_fields_of = fields


def manifest(out: Path, n: int) -> dict[str, Any]:
    text = (partition_path(out, NIGHTS[n]) / MANIFEST_NAME).read_text()
    result: dict[str, Any] = json.loads(text)
    return result


# -- point 1: notice and say ------------------------------------------------------------------


def test_the_manifest_records_each_extra_field_and_drop_says_so_once(
    server: Any, tmp_path: Path
) -> None:
    night(server, tmp_path, 0)
    sends(server, demo_fields)

    first = night(server, tmp_path, 1)

    section = manifest(tmp_path, 1)["extra_fields"]
    assert section["mode"] == "drop"
    by_name = {f["name"]: f for f in section["fields"]}
    assert sorted(by_name) == ["birthDate", "owner", "tag", "vaccinated", "weightKg"]
    owners = [demo_fields(i)["owner"] for i in range(7, PETS + 1, 7)]
    assert by_name["owner"] == {
        "name": "owner",
        "pets": carrying("owner"),
        "json_types": ["object"],
        "example": by_name["owner"]["example"],
        "first_seen": NIGHTS[1].isoformat(),
        "column": None,
    }
    assert by_name["owner"]["example"] in owners
    assert by_name["weightKg"]["json_types"] == ["number"]
    assert by_name["vaccinated"]["pets"] == carrying("vaccinated")
    assert section["appeared"] == sorted(by_name) and section["compared_with"] == "2026-11-20"
    assert first.exit_code == 0 and len(first.warnings) == 1
    assert str(first.warnings[0]).startswith(
        f"The API's pets changed shape: new fields birthDate (string, on {carrying('birthDate')}"
        " pets), owner (object, on "
    )
    assert "They were dropped (extra_fields='drop', the default); pass extra_fields='keep'" in str(
        first.warnings[0]
    )
    columns = pq.read_schema(partition_path(tmp_path, NIGHTS[1]) / PARQUET_NAME).names
    assert columns == ["id", "name", "categoryId", "status"]

    quiet = night(server, tmp_path, 2)

    assert quiet.warnings == []
    assert str(quiet.extra_fields.summary()) == (
        "extra fields: birthDate, owner, tag, vaccinated, weightKg: dropped (extra_fields='drop')"
    )
    assert manifest(tmp_path, 2)["extra_fields"]["fields"][0]["first_seen"] == "2026-11-21"


def test_a_field_that_disappears_or_changes_type_warns_again(server: Any, tmp_path: Path) -> None:
    sends(server, lambda i: {"tag": "calm", "age": 3})
    night(server, tmp_path, 0)
    sends(server, lambda i: {"tag": "calm", "age": "three"})

    report = night(server, tmp_path, 1)

    assert report.extra_fields.retyped == ("age",)
    assert [str(warning) for warning in report.warnings] == [
        f"The API's pets changed shape: fields whose JSON types changed age (string, on {PETS} "
        "pets). They were dropped (extra_fields='drop', the default); pass "
        "extra_fields='keep' to keep them as columns, or extra_fields='fail' to refuse such a "
        "night."
    ]
    sends(server, lambda i: {"age": "three"})

    gone = night(server, tmp_path, 2)

    assert gone.extra_fields.disappeared == ("tag",)
    assert gone.warnings == [
        "The API's pets changed shape: fields no longer sent: tag (in the snapshot of 2026-11-21)."
    ]


def test_without_extra_fields_the_manifest_says_none_and_nothing_warns(
    server: Any, tmp_path: Path
) -> None:
    report = night(server, tmp_path, 0)

    assert report.warnings == [] and report.extra_fields.summary() is None
    assert manifest(tmp_path, 0)["extra_fields"] == {
        "mode": "drop",
        "fields": [],
        "compared_with": None,
        "appeared": [],
        "disappeared": [],
        "types_changed": [],
    }


def test_a_long_example_is_cut_in_the_manifest(server: Any, tmp_path: Path) -> None:
    sends(server, lambda i: {"notes": "x" * 500})

    night(server, tmp_path, 0)

    example = manifest(tmp_path, 0)["extra_fields"]["fields"][0]["example"]
    assert example == ('"' + "x" * 500)[: EXAMPLE_MAX_CHARS - 3] + "..."


# -- point 2: keep and fail -------------------------------------------------------------------


def test_keep_writes_typed_columns_after_the_known_ones_in_parquet_and_csv(
    server: Any, tmp_path: Path
) -> None:
    sends(server, demo_fields)

    report = night(server, tmp_path, 0, extra_fields="keep")

    assert report.exit_code == 0
    folder = partition_path(tmp_path, NIGHTS[0])
    schema = pq.read_schema(folder / PARQUET_NAME)
    assert [(f.name, str(f.type)) for f in schema] == [
        ("id", "int64"),
        ("name", "string"),
        ("categoryId", "int64"),
        ("status", "string"),
        ("birthDate", "string"),
        ("owner", "string"),
        ("tag", "string"),
        ("vaccinated", "bool"),
        ("weightKg", "double"),
    ]
    columns = {f["name"]: f["column"] for f in manifest(tmp_path, 0)["extra_fields"]["fields"]}
    assert columns == {
        "birthDate": "string",
        "owner": "json",
        "tag": "string",
        "vaccinated": "bool",
        "weightKg": "float64",
    }
    frame = load_snapshot(tmp_path).set_index("id")
    assert json.loads(frame.loc[14, "owner"]) == demo_fields(14)["owner"]
    assert frame.loc[20, "weightKg"] == demo_fields(20)["weightKg"]
    assert bool(frame.loc[8, "vaccinated"]) is True and frame.loc[1, "tag"] is pd_na()
    header = (folder / CSV_NAME).read_text().splitlines()[0]
    assert header == (
        '"id","name","categoryId","status","birthDate","owner","tag","vaccinated","weightKg"'
    )


def pd_na() -> object:
    import pandas as pd

    return pd.NA


def test_keep_keeps_exact_int64(server: Any, tmp_path: Path) -> None:
    sends(server, lambda i: {"serial": 2**63 - i})

    night(server, tmp_path, 0, extra_fields="keep")

    frame = load_snapshot(tmp_path).set_index("id")
    assert str(frame["serial"].dtype) == "Int64" and frame.loc[1, "serial"] == 2**63 - 1


def test_a_value_that_no_longer_fits_its_column_quarantines_the_pet(
    server: Any, tmp_path: Path
) -> None:
    sends(server, lambda i: {"weightKg": 1.5 + i})
    night(server, tmp_path, 0, extra_fields="keep")
    sends(server, lambda i: {"weightKg": "12kg" if i == 5 else 2.5 + i})

    report = night(server, tmp_path, 1, extra_fields="keep")

    assert report.quarantined == 2  # the status listing and the sweep each met it
    assert report.pets == PETS - 1
    lines = (partition_path(tmp_path, NIGHTS[1]) / QUARANTINE_NAME).read_text().splitlines()
    entry = json.loads(lines[0])
    assert entry["record"]["id"] == 5 and entry["record"]["weightKg"] == "12kg"
    assert entry["reason"].startswith(
        'extra field weightKg is string "12kg", which does not fit its float64 column (its type '
        "in the previous snapshot); petsync never casts."
    )
    frame = load_snapshot(tmp_path)
    assert str(frame["weightKg"].dtype) == "Float64" and 5 not in set(frame["id"])


def test_fail_publishes_nothing_and_names_the_fields(server: Any, tmp_path: Path) -> None:
    night(server, tmp_path, 0, extra_fields="fail")  # no extra fields yet: published
    sends(server, lambda i: {"tag": "calm"} if i % 2 else {})

    with pytest.raises(PetsyncError) as caught:
        night(server, tmp_path, 1, extra_fields="fail")

    assert caught.value.exit_code == 1
    assert str(caught.value).startswith(
        "export refused to publish (extra_fields='fail'): the API sent fields beyond the "
        f"interface's: tag (string, on {PETS // 2} pets). Nothing was published"
    )
    assert [s.date for s in list_snapshots(tmp_path)] == [NIGHTS[0]]


# -- point 3: tables follow, additively -------------------------------------------------------


def test_load_snapshots_gives_the_union_of_columns_null_before_a_field_existed(
    server: Any, tmp_path: Path
) -> None:
    night(server, tmp_path, 0, extra_fields="keep")
    sends(server, lambda i: {"tag": f"t{i}"})
    night(server, tmp_path, 1, extra_fields="keep")

    frame = load_snapshots(tmp_path)

    assert list(frame.columns) == ["snapshot_date", "id", "name", "categoryId", "status", "tag"]
    counts = frame.groupby(frame.snapshot_date.dt.strftime("%Y-%m-%d"))["tag"].count().to_dict()
    assert counts == {"2026-11-20": 0, "2026-11-21": PETS}
    assert str(frame["id"].dtype) == "Int64" and str(frame["tag"].dtype) == "string"


def test_diff_reports_fields_that_appeared_or_disappeared_and_changed_values(
    server: Any, tmp_path: Path
) -> None:
    sends(server, lambda i: {"tag": "calm", "age": 1})
    night(server, tmp_path, 0, extra_fields="keep")
    sends(server, lambda i: {"tag": "shy" if i in (3, 4) else "calm", "colour": "red"})
    night(server, tmp_path, 1, extra_fields="keep")

    result = diff_snapshots(NIGHTS[0], NIGHTS[1], directory=tmp_path)

    assert result.fields_appeared == ("colour",) and result.fields_disappeared == ("age",)
    assert result.field_changes == {"tag": 2}
    body = result.to_json(details=True)
    assert body["field_changes"] == [{"field": "tag", "pets": 2}]
    assert body["details"]["field_changes"][0] == {
        "id": 3,
        "name": result.field_change_rows["name"][0],
        "field": "tag",
        "value_old": "calm",
        "value_new": "shy",
    }


def test_delta_adds_columns_and_refuses_a_changed_type(server: Any, tmp_path: Path) -> None:
    pytest.importorskip("deltalake")
    night(server, tmp_path, 0, extra_fields="keep", table_format="delta")
    sends(server, lambda i: {"tag": "calm"})
    night(server, tmp_path, 1, extra_fields="keep", table_format="delta")

    import deltalake

    table = deltalake.DeltaTable(str(tmp_path / "pets")).to_pyarrow_table()
    dates, tags_sent = table["snapshot_date"].to_pylist(), table["tag"].to_pylist()
    tags = {(str(d), t) for d, t in zip(dates, tags_sent, strict=True)}
    assert tags == {("2026-11-20", None), ("2026-11-21", "calm")}
    frame = load_snapshots(tmp_path)
    assert frame.groupby(frame.snapshot_date.dt.strftime("%Y-%m-%d"))["tag"].count().to_dict() == {
        "2026-11-20": 0,
        "2026-11-21": PETS,
    }
    # A night that drops the field forgets its type; the table does not.
    night(server, tmp_path, 2, table_format="delta")
    sends(server, lambda i: {"tag": i})
    with pytest.raises(ConfigError) as caught:
        night(server, tmp_path, 3, extra_fields="keep", table_format="delta")
    assert "column tag is string, tonight's values are int64" in str(caught.value)
    assert "Nothing was committed." in str(caught.value)


# -- point 4: the interface's fields keep their rules -----------------------------------------


def test_interface_fields_keep_their_rules_and_other_cases_are_extra(
    server: Any, tmp_path: Path
) -> None:
    def fields(pet_id: int) -> dict[str, Any]:
        if pet_id == 7:
            return {"categoryId": "7"}  # the interface's field, as a string: refused
        return {"CategoryId": pet_id + 1000}

    sends(server, fields)

    report = night(server, tmp_path, 0, extra_fields="keep")

    assert report.quarantined >= 1
    reasons = {
        json.loads(line)["reason"]
        for line in (partition_path(tmp_path, NIGHTS[0]) / QUARANTINE_NAME).read_text().splitlines()
    }
    assert reasons == {"Pet 'categoryId' must be an int64 integer, got str '7'"}
    frame = load_snapshot(tmp_path).set_index("id")
    assert 7 not in frame.index and frame.loc[8, "categoryId"] == 8
    # Kept, CategoryId would clash with categoryId in readers that ignore case: no column.
    assert list(frame.columns) == ["name", "categoryId", "status"]
    (entry,) = manifest(tmp_path, 0)["extra_fields"]["fields"]
    assert (entry["name"], entry["pets"], entry["column"]) == ("CategoryId", PETS - 1, None)
    assert report.extra_fields.summary() == (
        "extra fields: -: kept as columns; not CategoryId: a column of that name, ignoring "
        "case, exists (in the manifest only)"
    )


def test_kept_fields_whose_names_clash_ignoring_case_get_one_column(
    server: Any, tmp_path: Path
) -> None:
    sends(server, lambda i: {"Tag": "A", "tag": "b", "snapshot_date": "x"})

    report = night(server, tmp_path, 0, extra_fields="keep", table_format="delta")

    assert list(load_snapshot(tmp_path).columns)[4:] == ["Tag"]
    assert [f.column for f in report.extra_fields.fields] == ["string", None, None]


# -- the column-type rules --------------------------------------------------------------------

CHOICES: dict[str, tuple[list[Any], ColumnType]] = {
    "strings": (["a", "b", None], "string"),
    "ints": ([1, -(2**63)], "int64"),
    "ints beyond int64": ([1, 2**63], "json"),
    "ints and floats": ([1, 2.5], "float64"),
    "big ints and floats": ([2**53 + 1, 2.5], "json"),
    "bools": ([True, False], "bool"),
    "objects and arrays": ([{"a": 1}, [1]], "json"),
    "strings and ints": (["1", 2], "json"),
    "nulls only": ([None], "string"),
}


@pytest.mark.parametrize(("values", "column"), list(CHOICES.values()), ids=list(CHOICES))
def test_a_new_field_gets_the_narrowest_column_its_values_fit(
    values: list[Any], column: ColumnType
) -> None:
    tally = FieldTally()
    for value in values:
        tally.add(json.dumps({"f": value}))

    assert choose_column(tally.fields["f"]) == column
    assert all(fits(value, column) for value in values)


FITS = {
    "bool is no int": (True, "int64", False),
    "int in float": (3, "float64", True),
    "string is no bool": ("true", "bool", False),
    "float is no int": (1.0, "int64", False),
    "anything in json": ({"a": [1]}, "json", True),
    "null anywhere": (None, "int64", True),
    "int is no string": (1, "string", False),
}


@pytest.mark.parametrize(("value", "column", "expected"), list(FITS.values()), ids=list(FITS))
def test_a_value_fits_a_column_only_without_loss(
    value: object, column: ColumnType, expected: bool
) -> None:
    assert fits(value, column) is expected


def test_a_field_null_on_every_pet_fixes_no_type(server: Any, tmp_path: Path) -> None:
    sends(server, lambda i: {"chip": None})
    night(server, tmp_path, 0, extra_fields="keep")
    sends(server, lambda i: {"chip": i})

    report = night(server, tmp_path, 1, extra_fields="keep")

    assert report.quarantined == 0
    assert [(f.name, f.column) for f in report.extra_fields.fields] == [("chip", "int64")]


def test_a_sweep_row_rebuilt_from_its_page_keeps_its_extra_fields(tmp_path: Path) -> None:
    def page(tag: str) -> Any:
        body = json.dumps(
            [{"id": 1, "name": "Rex", "categoryId": 7, "status": "sold", "tag": tag}]
        ).encode()
        records = typed_records(body)
        assert records is not None
        return records

    collector = PetCollector(tmp_path / "scratch", listed_statuses=["sold"])
    collector.add(source_of(PetStatus.SOLD), page("old").columns)
    later = page("new")  # the sweep, fetched last: its pet is kept as a ghost, then wins
    collector.add(source_of(None), later.columns, later.body)
    result = collector.finish()

    assert (result.rebuilt, result.conflicting_duplicates) == (1, 1)
    assert result.tally_extra_fields().fields["tag"].example == "new"
    (batch,) = list(result.batches({"tag": "string"}))
    assert batch.to_pylist() == [
        {"id": 1, "name": "Rex", "categoryId": 7, "status": "sold", "tag": "new"}
    ]


def test_a_field_that_is_sometimes_null_has_not_changed_type(server: Any, tmp_path: Path) -> None:
    sends(server, lambda i: {"tag": "calm"})
    night(server, tmp_path, 0)
    sends(server, lambda i: {"tag": None if i % 2 else "calm"})

    report = night(server, tmp_path, 1)

    assert report.warnings == [] and report.extra_fields.retyped == ()
    assert report.extra_fields.fields[0].json_types == ("null", "string")
