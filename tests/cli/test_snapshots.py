"""`petsync snapshots DIR|URI`: one line per night, oldest first, on every store (a folder,
S3 on moto, GCS and Azure on their emulators) and every table format (folders, Delta,
Iceberg), as text and as JSON."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest
from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.models import Pet
from petsync.export.config import ExportConfig
from petsync.export.inventory import describe_snapshots
from petsync.export.run import run_export
from petsync.storage.filesystem import open_filesystem
from petsync.storage.location import parse_location
from tests.conftest import S3Bucket, StartServer
from tests.export.emulators import EmulatedBucket
from tests.export.published import publish_snapshot
from tests.export.scripted import BASE, ScriptedClient

DAY1, DAY2, DAY3, DAY4 = (dt.date(2026, 11, d) for d in (20, 21, 22, 23))
AHEAD = dt.date(2100, 1, 1)
DROP = {"flagged": True, "reason": "pets fell from 3 to 1 (67%), more than --max-drop 20%"}


def _snapshots(*args: str) -> Result:
    return CliRunner().invoke(cli, ["snapshots", *args])


def _size(partition: Path) -> int:
    return sum(p.stat().st_size for p in partition.rglob("*") if p.is_file())


def _nights(out: Path) -> dict[dt.date, Path]:
    rows = [(1, "Rex", 1, "available"), (2, "Tom", 1, "sold"), (3, "Zoë", 2, None)]
    return {
        DAY1: publish_snapshot(out, DAY1, rows),
        DAY2: publish_snapshot(out, DAY2, rows[:2], complete=False),
        DAY3: publish_snapshot(out, DAY3, rows[:1], drop_check=DROP),
        AHEAD: publish_snapshot(out, AHEAD, rows),
    }


def test_one_line_per_night_oldest_first_with_its_trust(tmp_path: Path) -> None:
    partitions = _nights(tmp_path)

    result = _snapshots(str(tmp_path))

    assert result.exit_code == 0, result.output
    sizes = {date: f"{_size(p) / 1024:.1f} KiB" for date, p in partitions.items()}
    assert result.stdout.splitlines() == [
        f"2026-11-20  complete              3 pets    {sizes[DAY1]}  extra fields: none",
        f"2026-11-21  incomplete            2 pets    {sizes[DAY2]}  extra fields: none  "
        "flagged: incomplete: complete is not true",
        f"2026-11-22  drop flagged          1 pets    {sizes[DAY3]}  extra fields: none  "
        f"flagged: suspicious drop: {DROP['reason']}",
        f"2100-01-01  dated ahead           3 pets    {sizes[AHEAD]}  extra fields: none  "
        "flagged: dated after today: a clock that ran ahead; readers skip it",
    ]


def test_json_holds_the_same_facts_with_sizes_in_bytes(tmp_path: Path) -> None:
    partitions = _nights(tmp_path)

    result = _snapshots(str(tmp_path), "--json")

    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["location"] == str(tmp_path)
    nights = document["snapshots"]
    assert [n["date"] for n in nights] == ["2026-11-20", "2026-11-21", "2026-11-22", "2100-01-01"]
    assert [n["trust"] for n in nights] == ["complete", "incomplete", "drop flagged", "dated ahead"]
    assert [n["pets"] for n in nights] == [3, 2, 1, 3]
    assert [n["size_bytes"] for n in nights] == [_size(p) for p in partitions.values()]
    assert nights[0]["reasons"] == [] and nights[2]["reasons"] == [
        f"suspicious drop: {DROP['reason']}"
    ]
    assert nights[1]["path"] == str(partitions[DAY2])


def test_no_snapshot_yet_says_so_and_exits_0(tmp_path: Path) -> None:
    result = _snapshots(str(tmp_path))
    assert result.exit_code == 0, result.output
    assert result.stdout == f"no snapshots under {tmp_path}\n"
    assert json.loads(_snapshots(str(tmp_path), "--json").stdout)["snapshots"] == []


@pytest.mark.parametrize("made", ["nothing", "a file"])
def test_a_folder_that_is_not_there_is_an_input_error_naming_it(tmp_path: Path, made: str) -> None:
    typo = tmp_path / "petsnyc"  # a mistyped --out: not "no snapshots yet"
    if made == "a file":
        typo.write_text("not a folder")
    for args in ([str(typo)], [str(typo), "--json"]):
        result = _snapshots(*args)
        assert result.exit_code == 2, result.output
        assert result.stdout == ""
        assert f"{typo} is not a folder" in result.stderr
        assert "the export's --out" in result.stderr


def _export(out: str, pets: list[Pet], today: dt.date, **options: Any) -> None:
    config = ExportConfig(
        client=ClientConfig(BASE, ApiKey("k")), out_dir=out, max_drop=1.0, **options
    )
    run_export(config, client=ScriptedClient(pets), today=today)


CATALOGUE = [Pet(1, "Rex", 1, "available"), Pet(2, "Tom", 1, "sold")]


@pytest.mark.parametrize("table_format", ["hive", "delta", "iceberg"])
def test_every_table_format_lists_its_nights_with_their_size(
    tmp_path: Path, table_format: str
) -> None:
    out = str(tmp_path / "out")
    _export(out, CATALOGUE, DAY1, table_format=table_format)
    _export(out, CATALOGUE[:1], DAY2, table_format=table_format)

    nights = describe_snapshots(out, horizon=DAY4)

    assert [(n.date, n.trust, n.pets) for n in nights] == [
        (DAY1, "complete", 2),
        (DAY2, "complete", 1),
    ]
    assert all(n.size is not None and n.size > 500 for n in nights)  # a Parquet file at least
    result = _snapshots(out)
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 2


def test_extra_fields_are_named_with_what_the_night_did_with_them(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    server = petstore_server(seed_pets=3)
    server.faults.extra_fields = True
    server.faults.extra_fields_of = lambda pet_id: {"color": "red", "weight": pet_id}
    out = str(tmp_path / "out")
    config = ExportConfig(
        client=ClientConfig(server.base_url, server.api_key), out_dir=out, extra_fields="keep"
    )
    run_export(config, today=DAY1)

    (night,) = describe_snapshots(out, horizon=DAY4)

    assert night.extra_fields == ("color", "weight")
    assert night.extra_fields_mode == "keep"
    assert "extra fields: color, weight (keep)" in _snapshots(out).stdout


@pytest.fixture(params=["s3", "gcs", "azure"])
def any_store(request: pytest.FixtureRequest) -> EmulatedBucket | S3Bucket:
    """S3 (moto), GCS (fake-gcs-server) and Azure (Azurite)."""
    bucket: EmulatedBucket | S3Bucket = request.getfixturevalue(request.param)
    return bucket


def test_every_store_lists_the_same_nights_as_a_folder(
    any_store: EmulatedBucket | S3Bucket, tmp_path: Path
) -> None:
    local = tmp_path / "local"
    _nights(local)
    pafs.copy_files(
        str(local.absolute()),
        f"{any_store.name}/petsync",
        source_filesystem=pafs.LocalFileSystem(),
        destination_filesystem=open_filesystem(parse_location(any_store.uri())),
    )

    on_store = _snapshots(any_store.uri(), "--json")

    assert on_store.exit_code == 0, on_store.output
    stored = json.loads(on_store.stdout)["snapshots"]
    here = json.loads(_snapshots(str(local), "--json").stdout)["snapshots"]
    assert [{**n, "path": None} for n in stored] == [{**n, "path": None} for n in here]
    assert stored[0]["path"] == f"{any_store.uri()}/pets/snapshot_date=2026-11-20"
