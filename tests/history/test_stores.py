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
from petsync.core.errors import ExitCode, LockedError, PetsyncError
from petsync.core.models import Pet
from petsync.export.config import ExportConfig
from petsync.export.location import parse_location
from petsync.export.objectstore.filesystem import open_filesystem
from petsync.export.objectstore.lock import ObjectLock
from petsync.export.run import run_export
from petsync.history.load import load_history, read_history_state
from petsync.history.table import HISTORY_DIR, Night
from petsync.history.update import update_history
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


def test_incremental_updates_on_s3_equal_a_local_rebuild(s3: S3Bucket, tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    for n, (date, rows, complete) in enumerate(random_nights(5, nights=6, pets=30)):
        night = tmp_path / f"night{n}"
        publish_snapshot(night, date, rows, complete=complete)
        publish_snapshot(whole, date, rows, complete=complete)
        upload(night, s3)
        if n % 2:  # sometimes one night at a time, sometimes two
            update_history(s3.uri())
    report = update_history(s3.uri())
    update_history(whole, rebuild=True)

    assert load_history(s3.uri()).equals(load_history(whole))
    assert read_history_state(s3.uri()).nights == read_history_state(whole).nights
    assert report.path == f"{s3.uri()}/history"
    assert update_history(s3.uri()).nights == ()  # nothing new: nothing changes
    # The table's files and its state; no stray file, no lock left behind.
    keys = s3.object_keys("petsync/history/")
    state = read_history_state(s3.uri())
    assert keys == sorted(f"petsync/history/{name}" for name in ["_history.json", *state.files])


def test_a_rebuild_on_s3_replaces_the_table_and_as_of_reads_it(
    s3: S3Bucket, tmp_path: Path
) -> None:
    publish_snapshot(tmp_path, START, [(1, "a", 1, "available"), (2, "b", 1, None)])
    publish_snapshot(tmp_path, START + dt.timedelta(days=1), [(1, "a", 1, "sold")])
    upload(tmp_path, s3)
    update_history(s3.uri())
    before = set(s3.object_keys("petsync/history/"))

    report = update_history(s3.uri(), rebuild=True)

    after = set(s3.object_keys("petsync/history/"))
    assert report.rebuilt and report.versions == 3 and report.current == 1
    assert before & after == {"petsync/history/_history.json"}  # every file new
    on_day1 = load_history(s3.uri(), as_of=START)
    assert on_day1["id"].tolist() == [1, 2] and on_day1["status"].isna().tolist() == [False, True]
    assert load_history(s3.uri(), as_of=START + dt.timedelta(days=1))["id"].tolist() == [1]


def test_a_second_update_on_s3_is_refused_while_the_lock_is_held(
    s3: S3Bucket, tmp_path: Path
) -> None:
    publish_snapshot(tmp_path, START, [(1, "a", 1, "sold")])
    upload(tmp_path, s3)
    lock = "petsync/history/.petsync.lock"
    with ObjectLock(parse_location(f"{s3.uri()}/{HISTORY_DIR}")):
        with pytest.raises(LockedError, match=f"it holds the lock s3://{s3.name}/{lock}"):
            update_history(s3.uri())
        assert s3.object_keys("petsync/history/") == [lock]  # nothing written while refused

    assert update_history(s3.uri()).versions == 1  # the lock released: it runs
    assert lock not in s3.object_keys("petsync/")  # and released again


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
    assert f"no snapshots under {s3.uri()}/pets; `petsync export --out {s3.uri()}`" in (
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


def test_history_beside_the_delta_layout_equals_the_one_beside_partitions(tmp_path: Path) -> None:
    delta, hive = str(tmp_path / "delta"), str(tmp_path / "hive")
    for date, pets in catalogues():
        export(delta, pets, date, table_format="delta")
        export(hive, pets, date)
        update_history(delta)  # one night at a time
    update_history(hive)

    assert load_history(delta).equals(load_history(hive))
    assert [n.date for n in read_history_state(delta).nights] == [d for d, _ in catalogues()]
    rebuilt = update_history(delta, rebuild=True)
    assert without_run_ids(rebuilt.nights) == without_run_ids(read_history_state(hive).nights)
    assert load_history(delta).equals(load_history(hive))


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
