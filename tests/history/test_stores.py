"""The history beside snapshots on an object store (moto's S3) and beside the Delta layout."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.errors import ExitCode, PetsyncError
from petsync.core.models import Pet
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.history.load import load_history, read_history_state
from petsync.history.table import Night
from petsync.history.update import update_history
from petsync.storage.filesystem import open_filesystem
from petsync.storage.location import parse_location
from tests.conftest import S3Bucket
from tests.export.published import publish_snapshot
from tests.export.scripted import BASE, ScriptedClient
from tests.history.nights import START, random_nights


def upload(local: Path, bucket: S3Bucket, prefix: str = "petsync") -> None:
    """Copy the snapshots published under ``local`` to ``s3://bucket/prefix``, as they are."""
    pafs.copy_files(
        str(local.absolute()),
        f"{bucket.name}/{prefix}",
        source_filesystem=pafs.LocalFileSystem(),
        destination_filesystem=open_filesystem(parse_location(bucket.uri(prefix))),
    )


def test_petsync_history_on_s3_through_the_cli(s3: S3Bucket, tmp_path: Path) -> None:
    publish_snapshot(tmp_path, START, [(1, "Rex", 1, "available")])
    upload(tmp_path, s3)

    result = CliRunner().invoke(cli, ["history", s3.uri(), "--json"])

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["path"] == f"{s3.uri()}/history"
    assert json.loads(result.stdout)["versions"] == 1


def test_no_snapshots_on_s3_exits_2_naming_the_export(s3: S3Bucket) -> None:
    result = CliRunner().invoke(cli, ["history", s3.uri()])

    assert result.exit_code == 2
    assert f"no snapshots under {s3.uri()}/pets; an export with --out {s3.uri()} writes" in (
        result.stderr
    )


def export(out: str, pets: list[Pet], today: dt.date, **options: Any) -> None:
    config = ExportConfig(
        client=ClientConfig(BASE, ApiKey("k")), out_dir=out, max_drop=1.0, **options
    )
    run_export(config, client=ScriptedClient(pets), today=today)


def catalogues() -> list[tuple[dt.date, list[Pet]]]:
    out = []
    for date, rows, complete in random_nights(6, nights=5, pets=20):
        if complete:  # an export of a scripted catalogue is complete
            out.append(
                (date, [Pet(i, name, category, status) for i, name, category, status in rows])
            )
    return out


def without_run_ids(nights: tuple[Night, ...]) -> list[Night]:
    return [dataclasses.replace(night, run_id=None) for night in nights]


@pytest.mark.parametrize("table_format", ["delta", "iceberg"])
def test_history_beside_a_table_format_equals_the_one_beside_partitions(
    tmp_path: Path, table_format: str
) -> None:
    table, hive = str(tmp_path / table_format), str(tmp_path / "hive")
    for date, pets in catalogues():
        export(table, pets, date, table_format=table_format)
        export(hive, pets, date)
        update_history(table)  # one night at a time
    update_history(hive)

    assert load_history(table).equals(load_history(hive))
    assert [n.date for n in read_history_state(table).nights] == [d for d, _ in catalogues()]
    rebuilt = update_history(table, rebuild=True)
    assert without_run_ids(rebuilt.nights) == without_run_ids(read_history_state(hive).nights)
    assert load_history(table).equals(load_history(hive))


def test_a_missing_bucket_exits_2_naming_it(s3: S3Bucket) -> None:
    uri = f"s3://{s3.name}-missing/petsync"

    result = CliRunner().invoke(cli, ["history", uri])

    assert result.exit_code == 2, result.output
    assert f"bucket '{s3.name}-missing' does not exist" in result.stderr
    assert "Traceback" not in result.output


def test_load_history_with_refused_credentials_exits_2_without_showing_them(
    s3: S3Bucket, tmp_path: Path
) -> None:
    publish_snapshot(tmp_path, START, [(1, "a", 1, "sold")])
    upload(tmp_path, s3)
    update_history(s3.uri())
    s3.enforce_credentials(True)

    with pytest.raises(PetsyncError) as caught:
        load_history(s3.uri())

    assert caught.value.exit_code == ExitCode.USAGE
    assert "refused the credentials" in str(caught.value)
    assert "testing-secret-0123456789" not in str(caught.value)
