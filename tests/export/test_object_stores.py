"""Snapshots on object stores: S3 (moto), GCS (fake-gcs-server) and Azure (Azurite).

One body per case, run on each store (``any_store``) or on the two emulators
(``emulated``): publish and read back with every reader the docs show, re-run, ``--keep``,
a run killed mid-upload, ``load_snapshot``, ``petsync diff``, a missing bucket, the lock
(conditional create, expiry, fenced confirm, conditional release; a second run exits 75).
Nothing here is a mock of the store: moto and the emulators speak the stores' own
protocols. What only S3 has is tests/export/test_s3_store.py.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pandas as pd
import polars as pl
import pyarrow.dataset as ds
import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.core.errors import ConfigError, ExitCode, LockedError
from petsync.formats.snapshots import list_snapshots, load_snapshot
from petsync.history.diff import diff_snapshots
from petsync.storage.credentials import AZURITE_KEY
from petsync.storage.location import parse_location
from petsync.storage.lock import DEFAULT_LOCK_EXPIRY, ObjectLock
from petsync.storage.object_publication import ObjectStagedSnapshot
from petsync.storage.store import object_lock
from tests.conftest import S3Bucket
from tests.export.emulators import EmulatedBucket
from tests.export.scripted import BASE, ScriptedClient
from tests.export.store_runs import CATALOGUE, DAY1, DAY2, DAY3, IDS, export

T0 = dt.datetime(2026, 11, 22, 2, 0, tzinfo=dt.UTC)
LATER = T0 + DEFAULT_LOCK_EXPIRY + dt.timedelta(hours=1)


def test_export_reads_back_exactly_with_pyarrow_pandas_polars_and_load_snapshot(
    any_store: EmulatedBucket | S3Bucket,
) -> None:
    emulated = any_store
    report = export(emulated.uri(), ScriptedClient(CATALOGUE))

    partition = f"{emulated.uri()}/pets/snapshot_date=2026-11-21"
    assert report.snapshot_path == partition
    assert emulated.object_keys("petsync/pets") == [
        "petsync/pets/snapshot_date=2026-11-21/_manifest.json",
        "petsync/pets/snapshot_date=2026-11-21/_pets.csv",
        "petsync/pets/snapshot_date=2026-11-21/_quarantine.jsonl",
        "petsync/pets/snapshot_date=2026-11-21/pets.parquet",
    ]
    assert emulated.object_keys("petsync/.petsync-tmp") == []
    assert emulated.object_keys("petsync/.petsync.lock") == []  # released
    frame = load_snapshot(emulated.uri())
    assert frame["id"].tolist() == IDS and str(frame["id"].dtype) == "Int64"
    assert frame.attrs["manifest"]["run_id"] == report.run_id
    dataset = ds.dataset(
        f"{emulated.name}/petsync/pets", filesystem=emulated.filesystem(), partitioning="hive"
    )
    assert sorted(dataset.to_table().column("id").to_pylist()) == IDS
    pandas = pd.read_parquet(
        f"{emulated.name}/petsync/pets", filesystem=emulated.filesystem()
    )  # as docs/notebooks.md shows: pyarrow's file system, no fsspec package
    assert sorted(pandas["id"].tolist()) == IDS and str(pandas["id"].dtype) == "int64"
    polars = pl.scan_pyarrow_dataset(dataset).select("id", "snapshot_date").collect()
    assert sorted(polars["id"].to_list()) == IDS and polars.schema["id"] == pl.Int64
    manifest = json.loads(
        emulated.filesystem()
        .open_input_stream(f"{emulated.name}/petsync/pets/snapshot_date=2026-11-21/_manifest.json")
        .read()
    )
    assert manifest["complete"] is True and "k-secret-123" not in json.dumps(manifest)
    assert "testing-secret" not in json.dumps(manifest)  # nor the store's credentials
    assert "testing-key-id" not in json.dumps(manifest)
    assert [s.path for s in list_snapshots(emulated.uri())] == [partition]


def test_same_day_rerun_replaces_the_snapshot_and_drops_files_it_no_longer_has(
    any_store: EmulatedBucket | S3Bucket,
) -> None:
    emulated = any_store
    export(emulated.uri(), ScriptedClient(CATALOGUE))

    export(emulated.uri(), ScriptedClient(CATALOGUE[:2]), format="parquet", max_drop=1.0)

    assert load_snapshot(emulated.uri())["id"].tolist() == [1, 2]
    assert "petsync/pets/snapshot_date=2026-11-21/_pets.csv" not in emulated.object_keys()
    assert emulated.object_keys("petsync/.petsync-tmp") == []


def test_keep_prunes_older_snapshots_and_diff_compares_two_nights(
    emulated: EmulatedBucket,
) -> None:
    export(emulated.uri(), ScriptedClient(CATALOGUE[:3]), today=DAY1)
    export(emulated.uri(), ScriptedClient(CATALOGUE), today=DAY2)
    result = diff_snapshots("2026-11-20", "2026-11-21", directory=emulated.uri())
    assert (result.added, result.removed) == (2, 0)
    shown = CliRunner().invoke(cli, ["diff", "2026-11-20", "2026-11-21", "--dir", emulated.uri()])
    assert shown.exit_code == 0, shown.output
    assert "2026-11-21" in shown.output

    clean = export(emulated.uri(), ScriptedClient(CATALOGUE), today=DAY3, keep=1)

    assert clean.pruned == [
        f"{emulated.uri()}/pets/snapshot_date=2026-11-20",
        f"{emulated.uri()}/pets/snapshot_date=2026-11-21",
    ]
    assert [s.date for s in list_snapshots(emulated.uri())] == [DAY3]
    assert not [k for k in emulated.object_keys() if "2026-11-20" in k or "2026-11-21" in k]


class Killed(BaseException):
    """The process died here: no handler, no clean-up ran."""


def test_a_run_killed_mid_upload_is_rolled_back_by_the_next_run(
    emulated: EmulatedBucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    export(emulated.uri(), ScriptedClient(CATALOGUE[:3]), now=T0)
    real_upload = ObjectStagedSnapshot._upload
    uploaded: list[str] = []

    def upload_then_die(self: ObjectStagedSnapshot, local: Any, name: str) -> None:
        if uploaded:
            raise Killed  # after the first whole object, during the second
        real_upload(self, local, name)
        uploaded.append(name)

    with monkeypatch.context() as patch:
        patch.setattr(ObjectStagedSnapshot, "_upload", upload_then_die)
        patch.setattr(ObjectStagedSnapshot, "discard", lambda self: None)  # a kill cleans nothing
        patch.setattr(ObjectLock, "release", lambda self: None)  # nor releases its lock
        with pytest.raises(Killed):
            export(emulated.uri(), ScriptedClient(CATALOGUE), now=T0)
    assert emulated.object_keys("petsync/.petsync-tmp")  # the staged objects it left
    assert load_snapshot(emulated.uri())["id"].tolist() == [1, 2, 4]  # the old snapshot
    with pytest.raises(LockedError):  # its lock holds until it expires
        export(emulated.uri(), ScriptedClient(CATALOGUE), now=T0 + dt.timedelta(hours=1))

    report = export(emulated.uri(), ScriptedClient(CATALOGUE), now=LATER)

    assert report.exit_code is ExitCode.OK
    assert load_snapshot(emulated.uri())["id"].tolist() == IDS
    assert emulated.object_keys("petsync/.petsync-tmp") == []


def lock_at(bucket: EmulatedBucket, moment: dt.datetime) -> ObjectLock:
    return object_lock(parse_location(bucket.uri()), now=lambda: moment)


def test_the_lock_refuses_until_expiry_then_is_taken_over_and_fences_its_old_holder(
    emulated: EmulatedBucket,
) -> None:
    first = lock_at(emulated, T0)
    first.acquire()

    with pytest.raises(LockedError) as caught:
        lock_at(emulated, T0 + dt.timedelta(hours=5, minutes=59)).acquire()
    assert caught.value.exit_code is ExitCode.LOCKED
    assert f"it holds the lock {emulated.uri()}/.petsync.lock" in str(caught.value)

    second = lock_at(emulated, LATER)
    second.acquire()  # the first expired: taken over under the store's condition
    with pytest.raises(LockedError) as lost:
        first.confirm()
    assert str(lost.value).startswith(f"this run lost the lock {emulated.uri()}/.petsync.lock")
    first.release()  # no longer its lock: left alone
    assert emulated.object_keys("petsync/.petsync.lock") == ["petsync/.petsync.lock"]
    second.confirm()
    second.release()
    assert emulated.object_keys("petsync/.petsync.lock") == []


def test_two_exports_on_one_location_one_exits_75_before_any_request(
    any_store: EmulatedBucket | S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulated = any_store
    monkeypatch.setenv("PETSYNC_API_KEY", "k-secret-123")
    client = ScriptedClient(CATALOGUE)
    with object_lock(parse_location(emulated.uri())):
        with pytest.raises(LockedError) as caught:
            export(emulated.uri(), client)
        result = CliRunner().invoke(cli, ["export", "--base-url", BASE, "--out", emulated.uri()])

    assert str(caught.value).startswith(
        f"another petsync run is writing to {emulated.uri()} (it holds the lock "
        f"{emulated.uri()}/.petsync.lock: host "
    )
    assert client.requests == 0
    assert result.exit_code == 75, result.output
    assert f"another petsync run is writing to {emulated.uri()}" in result.output
    assert emulated.object_keys("petsync/pets") == []
    assert emulated.object_keys("petsync/.petsync.lock") == []  # released by its holder


def test_a_refused_azure_key_is_exit_2_before_any_request_without_showing_it(
    azure: EmulatedBucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong = "d3Jvbmcta2V5LXZhbHVlLTAxMjM0NTY3ODk="
    connection = azure.environment["AZURE_STORAGE_CONNECTION_STRING"].replace(AZURITE_KEY, wrong)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection)
    client = ScriptedClient(CATALOGUE)

    with pytest.raises(ConfigError) as caught:
        export(azure.uri(), client)

    message = str(caught.value)
    assert message.startswith(
        f"cannot use out_dir='{azure.uri()}': the store refused the credentials for container "
        f"'{azure.name}' while checking the bucket ("
    )
    assert "set AZURE_STORAGE_CONNECTION_STRING" in message
    assert wrong not in message and AZURITE_KEY not in message
    assert client.requests == 0


def test_a_missing_bucket_is_exit_2_naming_it(any_store: EmulatedBucket | S3Bucket) -> None:
    emulated = any_store
    client = ScriptedClient(CATALOGUE)
    missing = emulated.uri().replace(emulated.name, "no-such-bucket-here")

    with pytest.raises(ConfigError) as caught:
        export(missing, client)

    assert caught.value.exit_code == ExitCode.USAGE
    word = "container" if emulated.kind == "azure" else "bucket"
    assert str(caught.value) == (
        f"cannot use out_dir='{missing}': {word} 'no-such-bucket-here' does not exist (or these "
        "credentials cannot see it); create it or fix the location. Nothing was fetched."
    )
    assert client.requests == 0


def test_an_account_sas_in_the_connection_string_publishes_and_locks_on_azure(
    azure: EmulatedBucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    from azure.storage.blob import AccountSasPermissions, ResourceTypes, generate_account_sas

    sas = generate_account_sas(
        "devstoreaccount1",
        AZURITE_KEY,
        resource_types=ResourceTypes(service=True, container=True, object=True),
        permission=AccountSasPermissions(read=True, write=True, delete=True, list=True),
        expiry=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1),
    )
    monkeypatch.setenv(
        "AZURE_STORAGE_CONNECTION_STRING",
        f"BlobEndpoint={azure.endpoint}/devstoreaccount1;SharedAccessSignature={sas}",
    )

    report = export(azure.uri(), ScriptedClient(CATALOGUE))

    assert report.exit_code is ExitCode.OK
    assert load_snapshot(azure.uri())["id"].tolist() == IDS
    assert azure.object_keys("petsync/.petsync.lock") == []
