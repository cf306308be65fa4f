"""Snapshots on S3 alone: what only S3 has (s3fs readers, its credentials and endpoint).

Flagged snapshots, pruning and diffing are petsync's own logic over objects: they run on
the in-memory S3 of tests/export/memstore.py; what talks to the store's protocol runs on
moto. What every store does alike is tests/export/test_object_stores.py, on each store.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pandas as pd
import pytest

from petsync.core.errors import ConfigError, ExitCode, PetsyncError
from petsync.formats.snapshots import list_snapshots, load_snapshot
from petsync.history.diff import diff_snapshots
from tests.conftest import S3Bucket
from tests.export.memstore import MemoryBucket
from tests.export.scripted import ScriptedClient
from tests.export.store_runs import CATALOGUE, DAY1, DAY2, DAY3, IDS, export


def storage_options(bucket: S3Bucket) -> dict[str, Any]:
    return {
        "key": "testing-key-id",
        "secret": "testing-secret-0123456789",
        "client_kwargs": {"endpoint_url": bucket.endpoint},
    }


def test_a_flagged_snapshot_on_an_object_store_is_hidden_from_dataset_readers(
    memory_s3: MemoryBucket,
) -> None:
    export(memory_s3.uri(), ScriptedClient(CATALOGUE), today=DAY1)
    incomplete = ScriptedClient(CATALOGUE[:2], incomplete={"sold": "the end was not proven"})

    export(memory_s3.uri(), incomplete, today=DAY2)

    day2 = "petsync/pets/snapshot_date=2026-11-21/"
    assert sorted(k for k in memory_s3.object_keys() if k.startswith(day2)) == [
        day2 + name
        for name in (
            "_manifest.json",
            "_pets.csv.flagged",
            "_pets.parquet.flagged",
            "_quarantine.jsonl",
        )
    ]
    assert [s.trusted for s in list_snapshots(memory_s3.uri())] == [True, False]
    assert load_snapshot(memory_s3.uri(), DAY2, flagged=True)["id"].tolist() == [1, 2]
    export(memory_s3.uri(), ScriptedClient(CATALOGUE), today=DAY2)  # a trusted re-run
    assert day2 + "_pets.parquet.flagged" not in memory_s3.object_keys()
    assert day2 + "_pets.csv.flagged" not in memory_s3.object_keys()
    assert load_snapshot(memory_s3.uri())["id"].tolist() == IDS


def test_keep_prunes_older_snapshots_only_after_a_clean_run(memory_s3: MemoryBucket) -> None:
    for day in (DAY1, DAY2):
        export(memory_s3.uri(), ScriptedClient(CATALOGUE), today=day)
    incomplete = ScriptedClient(CATALOGUE, incomplete={"sold": "the end was not proven"})

    flagged = export(memory_s3.uri(), incomplete, today=DAY3, keep=1)

    assert flagged.exit_code is ExitCode.INCOMPLETE and flagged.pruned == []
    clean = export(memory_s3.uri(), ScriptedClient(CATALOGUE), today=DAY3, keep=1)
    assert clean.pruned == [
        f"{memory_s3.uri()}/pets/snapshot_date=2026-11-20",
        f"{memory_s3.uri()}/pets/snapshot_date=2026-11-21",
    ]
    assert [s.date for s in list_snapshots(memory_s3.uri())] == [DAY3]
    assert not [k for k in memory_s3.object_keys() if "2026-11-20" in k or "2026-11-21" in k]


def test_diff_of_two_snapshots_on_an_object_store(memory_s3: MemoryBucket) -> None:
    export(memory_s3.uri(), ScriptedClient(CATALOGUE[:3]), today=DAY1)
    export(memory_s3.uri(), ScriptedClient(CATALOGUE), today=DAY2)

    result = diff_snapshots("2026-11-20", "2026-11-21", directory=memory_s3.uri())

    assert (result.added, result.removed) == (2, 0)
    assert result.new.path == f"{memory_s3.uri()}/pets/snapshot_date=2026-11-21"


def duckdb_on(bucket: S3Bucket) -> duckdb.DuckDBPyConnection:
    """DuckDB reading s3:// through s3fs (its httpfs extension is a download, not here)."""
    import s3fs

    connection = duckdb.connect()
    connection.register_filesystem(s3fs.S3FileSystem(**storage_options(bucket)))
    return connection


def test_pandas_and_duckdb_read_s3_through_s3fs(s3: S3Bucket) -> None:
    export(s3.uri(), ScriptedClient(CATALOGUE))
    pandas = pd.read_parquet(f"{s3.uri()}/pets", storage_options=storage_options(s3))
    assert sorted(pandas["id"].tolist()) == IDS and str(pandas["id"].dtype) == "int64"
    connection = duckdb_on(s3)

    rows = connection.sql(
        f"SELECT id FROM read_parquet('{s3.uri()}/pets/*/*.parquet', hive_partitioning=true) "
        "ORDER BY id"
    ).fetchall()

    assert [row[0] for row in rows] == IDS


def test_refused_credentials_fail_before_any_request_without_showing_them(
    s3: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-value")
    client = ScriptedClient(CATALOGUE)
    s3.enforce_credentials(True)

    with pytest.raises(ConfigError) as caught:
        export(s3.uri(), client)

    message = str(caught.value)
    assert caught.value.exit_code == ExitCode.USAGE
    assert message.startswith(
        f"cannot use out_dir='{s3.uri()}': the store refused the credentials for bucket "
        f"'{s3.name}' while checking the bucket ("
    )
    assert "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in message
    assert "wrong-secret-value" not in message and "testing-key-id" not in message
    assert client.requests == 0


def test_an_unreachable_store_fails_before_any_request(
    s3: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setattr("petsync.storage.filesystem.S3_ATTEMPTS", 1)  # no backoff
    client = ScriptedClient(CATALOGUE)

    with pytest.raises(ConfigError) as caught:
        export(s3.uri(), client)

    assert str(caught.value).startswith(
        f"cannot use out_dir='{s3.uri()}': cannot reach the store of bucket '{s3.name}' while "
        "checking the bucket ("
    )
    assert "AWS_ENDPOINT_URL (now http://127.0.0.1:9)" in str(caught.value)
    assert client.requests == 0


def test_an_unsupported_scheme_is_refused_before_anything(tmp_path: Any) -> None:
    with pytest.raises(PetsyncError) as caught:
        export("hdfs://namenode/petsync", ScriptedClient(CATALOGUE))

    assert caught.value.exit_code == ExitCode.USAGE
    assert str(caught.value) == (
        "out_dir='hdfs://namenode/petsync': petsync cannot write snapshots to hdfs:// locations; "
        "use a local path, file://, s3://, gs://, abfs:// or az://"
    )


def test_a_successful_export_to_s3_leaves_nothing_but_the_snapshot(s3: S3Bucket) -> None:
    # Folder markers included: a tool copying the prefix trips on an empty ".petsync-tmp/".
    export(s3.uri(), ScriptedClient(CATALOGUE), today=DAY1)
    export(s3.uri(), ScriptedClient(CATALOGUE), today=DAY2)
    listed = s3.client.list_objects_v2(Bucket=s3.name).get("Contents", [])
    keys = sorted(item["Key"] for item in listed)
    assert keys == [
        f"petsync/pets/snapshot_date={day}/{name}"
        for day in ("2026-11-20", "2026-11-21")
        for name in ("_manifest.json", "_pets.csv", "_quarantine.jsonl", "pets.parquet")
    ]
