"""The history beside snapshots on object stores: S3 (moto), GCS (fake-gcs-server) and Azure
(Azurite), most tests once on each (``any_store``), some on the emulators only.

On the buckets of tests/export/emulators.py: incremental updates equal to a local rebuild,
``--rebuild``, ``load_history(as_of=...)``, the lock object in ``OUT/history``, the CLI, a
missing bucket or container, and ``petsync report`` reading the history from the store.
Nothing here is a mock of the store: the emulators speak the stores' own protocols.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.errors import ExitCode, LockedError, PetsyncError
from petsync.core.models import Pet
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.history.load import load_history, load_transitions, read_history_state
from petsync.history.table import HISTORY_DIR, HistoryFiles, HistoryState
from petsync.history.update import update_history
from petsync.report.data import report_data
from petsync.storage.credentials import AZURITE_ACCOUNT, AZURITE_KEY
from petsync.storage.filesystem import open_filesystem
from petsync.storage.location import parse_location
from petsync.storage.store import object_lock
from tests.conftest import S3Bucket
from tests.export.emulators import EmulatedBucket, upload
from tests.export.published import publish_snapshot
from tests.export.scripted import BASE, ScriptedClient
from tests.history.nights import START, random_nights

DAY2 = START + dt.timedelta(days=1)


def history_files(bucket: EmulatedBucket | S3Bucket) -> list[str]:
    """The objects in the history's folder (GCS folder markers are not objects here)."""
    return bucket.object_keys(f"petsync/{HISTORY_DIR}/")


def test_incremental_updates_on_the_store_equal_a_local_rebuild(
    any_store: EmulatedBucket | S3Bucket, tmp_path: Path
) -> None:
    emulated = any_store
    whole = tmp_path / "whole"
    for n, (date, rows, complete) in enumerate(random_nights(5, nights=6, pets=30)):
        night = tmp_path / f"night{n}"
        publish_snapshot(night, date, rows, complete=complete)
        publish_snapshot(whole, date, rows, complete=complete)
        upload(night, emulated)
        if n % 2:  # sometimes one night at a time, sometimes two
            update_history(emulated.uri())
    report = update_history(emulated.uri())
    update_history(whole, rebuild=True)

    assert load_history(emulated.uri()).equals(load_history(whole))
    assert read_history_state(emulated.uri()).nights == read_history_state(whole).nights
    assert load_transitions(emulated.uri()).equals(load_transitions(whole))
    # A reader without petsync takes the folder as one table (GCS: no folder marker needed).
    folder = ds.dataset(
        f"{emulated.name}/petsync/history",
        filesystem=open_filesystem(parse_location(emulated.uri())),
    )
    assert folder.count_rows() == len(load_history(whole))
    assert report.path == f"{emulated.uri()}/history"
    assert update_history(emulated.uri()).nights == ()  # nothing new: nothing changes
    # The table's files and its state; no stray file, no lock left behind.
    state = read_history_state(emulated.uri())
    assert history_files(emulated) == sorted(
        f"petsync/history/{name}" for name in ["_history.json", *state.files]
    )


def test_a_rebuild_on_the_store_replaces_the_table_and_as_of_reads_it(
    any_store: EmulatedBucket | S3Bucket, tmp_path: Path
) -> None:
    emulated = any_store
    publish_snapshot(tmp_path, START, [(1, "a", 1, "available"), (2, "b", 1, None)])
    publish_snapshot(tmp_path, DAY2, [(1, "a", 1, "sold")])
    upload(tmp_path, emulated)
    update_history(emulated.uri())
    before = set(history_files(emulated))

    report = update_history(emulated.uri(), rebuild=True)

    after = set(history_files(emulated))
    assert report.rebuilt and report.versions == 3 and report.current == 1
    assert before & after == {"petsync/history/_history.json"}  # every file new
    on_day1 = load_history(emulated.uri(), as_of=START)
    assert on_day1["id"].tolist() == [1, 2] and on_day1["status"].isna().tolist() == [False, True]
    assert load_history(emulated.uri(), as_of=DAY2)["id"].tolist() == [1]
    assert load_history(emulated.uri(), as_of="2026-06-30").attrs["as_of"] == "2026-06-30"
    with pytest.raises(PetsyncError, match="as_of=2025-12-31 is before it"):
        load_history(emulated.uri(), as_of=START - dt.timedelta(days=1))


def test_rebuild_through_the_cli_on_the_store(emulated: EmulatedBucket, tmp_path: Path) -> None:
    publish_snapshot(tmp_path, START, [(1, "Rex", 1, "available")])
    upload(tmp_path, emulated)
    update_history(emulated.uri())
    publish_snapshot(tmp_path / "late", START - dt.timedelta(days=1), [(2, "Tom", 1, None)])
    upload(tmp_path / "late", emulated)  # a night older than the history's last one

    refused = CliRunner().invoke(cli, ["history", emulated.uri()])
    rebuilt = CliRunner().invoke(cli, ["history", emulated.uri(), "--rebuild", "--json"])

    assert refused.exit_code == 2, refused.output
    assert f"`petsync history {emulated.uri()} --rebuild`" in refused.stderr
    assert rebuilt.exit_code == 0, rebuilt.output
    shown = json.loads(rebuilt.stdout)
    assert (shown["rebuilt"], shown["versions"], shown["last_date"]) == (True, 2, "2026-01-01")
    assert load_history(emulated.uri())["id"].tolist() == [1, 2]


def export(out: str, pets: list[Pet], today: dt.date) -> int:
    config = ExportConfig(client=ClientConfig(BASE, ApiKey("k")), out_dir=out, max_drop=1.0)
    return int(run_export(config, client=ScriptedClient(pets), today=today).exit_code)


def test_a_second_update_exits_75_naming_the_lock_which_never_stops_an_export(
    any_store: EmulatedBucket | S3Bucket, tmp_path: Path
) -> None:
    emulated = any_store
    publish_snapshot(tmp_path, START, [(1, "a", 1, "sold")])
    upload(tmp_path, emulated)
    lock = "petsync/history/.petsync.lock"
    shown = f"{emulated.uri()}/history/.petsync.lock"
    with object_lock(parse_location(f"{emulated.uri()}/{HISTORY_DIR}")):
        with pytest.raises(LockedError, match=f"it holds the lock {shown}"):
            update_history(emulated.uri())
        cli_run = CliRunner().invoke(cli, ["history", emulated.uri()])
        assert cli_run.exit_code == ExitCode.LOCKED, cli_run.output
        assert f"it holds the lock {shown}" in cli_run.stderr
        assert history_files(emulated) == [lock]  # nothing written while refused
        # The export's lock is another object: the history's never stops a night's export.
        assert export(emulated.uri(), [Pet(1, "a", 1, "sold"), Pet(3, "c", 2, None)], DAY2) == 0

    report = update_history(emulated.uri())  # the lock released: it runs

    assert [n.date for n in report.nights] == [START, DAY2] and report.versions == 2
    assert lock not in emulated.object_keys("petsync/")  # and released again
    assert emulated.object_keys("petsync/.petsync.lock") == []


def test_an_update_that_failed_before_its_state_leaves_the_table_whole_and_the_next_cleans_up(
    emulated: EmulatedBucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish_snapshot(tmp_path / "one", START, [(1, "a", 1, "available"), (2, "b", 1, None)])
    upload(tmp_path / "one", emulated)
    update_history(emulated.uri())
    kept = history_files(emulated)
    publish_snapshot(tmp_path / "two", DAY2, [(1, "a", 1, "sold")])
    upload(tmp_path / "two", emulated)

    def cut(self: HistoryFiles, state: HistoryState) -> None:
        raise RuntimeError("the connection dropped")

    with monkeypatch.context() as patch:
        patch.setattr(HistoryFiles, "write_state", cut)
        with pytest.raises(RuntimeError):
            update_history(emulated.uri())
    strays = sorted(set(history_files(emulated)) - set(kept))
    assert strays  # the night's files, uploaded, named by no state
    assert load_history(emulated.uri())["valid_to"].isna().all()  # still the old table
    assert emulated.object_keys("petsync/history/.petsync.lock") == []  # released

    report = update_history(emulated.uri())

    assert [n.date for n in report.nights] == [DAY2] and report.versions == 3
    versions = load_history(emulated.uri())
    assert versions["id"].tolist() == [1, 1, 2] and versions["valid_to"].notna().sum() == 2
    state = read_history_state(emulated.uri())  # the strays removed, or rewritten in turn
    assert history_files(emulated) == sorted(
        f"petsync/history/{name}" for name in ["_history.json", *state.files]
    )


def test_petsync_history_through_the_cli_and_load_history_read_it_back(
    any_store: EmulatedBucket | S3Bucket, tmp_path: Path
) -> None:
    emulated = any_store
    publish_snapshot(tmp_path, START, [(1, "Rex", 1, "available")])
    upload(tmp_path, emulated)

    result = CliRunner().invoke(cli, ["history", emulated.uri(), "--json"])
    again = CliRunner().invoke(cli, ["history", emulated.uri()])

    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["path"] == f"{emulated.uri()}/history"
    assert json.loads(result.stdout)["versions"] == 1
    assert again.exit_code == 0, again.output
    assert f"{emulated.uri()}/history: up to date, 1 versions" in again.stdout
    frame = load_history(emulated.uri())
    assert frame["name"].tolist() == ["Rex"] and str(frame["id"].dtype) == "Int64"


def test_no_snapshots_on_the_store_exits_2_naming_the_export(
    any_store: EmulatedBucket | S3Bucket,
) -> None:
    emulated = any_store
    result = CliRunner().invoke(cli, ["history", emulated.uri()])

    assert result.exit_code == 2, result.output
    assert (
        f"no snapshots under {emulated.uri()}/pets; an export with --out {emulated.uri()} "
        "writes them" in result.stderr
    )


def test_a_missing_bucket_or_container_exits_2_naming_it(
    any_store: EmulatedBucket | S3Bucket,
) -> None:
    emulated = any_store
    uri = emulated.uri().replace(emulated.name, f"{emulated.name}-missing")
    word = "container" if emulated.kind == "azure" else "bucket"

    updated = CliRunner().invoke(cli, ["history", uri])
    with pytest.raises(PetsyncError) as loaded:
        load_history(uri)

    assert updated.exit_code == 2, updated.output
    said = f"{word} '{emulated.name}-missing' does not exist"
    assert f"the history at {uri}/history: {said}" in updated.stderr
    assert "Traceback" not in updated.output
    assert loaded.value.exit_code == ExitCode.USAGE and said in str(loaded.value)


def test_load_history_with_a_refused_azure_key_exits_2_without_showing_it(
    azure: EmulatedBucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish_snapshot(tmp_path, START, [(1, "a", 1, "sold")])
    upload(tmp_path, azure)
    update_history(azure.uri())
    wrong = "d3Jvbmcta2V5LXZhbHVlLTAxMjM0NTY3ODk="
    connection = azure.environment["AZURE_STORAGE_CONNECTION_STRING"].replace(AZURITE_KEY, wrong)
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection)

    with pytest.raises(PetsyncError) as caught:
        load_history(azure.uri())

    assert caught.value.exit_code == ExitCode.USAGE
    assert "refused the credentials" in str(caught.value)
    assert wrong not in str(caught.value) and AZURITE_KEY not in str(caught.value)


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


@pytest.fixture(scope="module")
def bundle_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """XDG_CACHE_HOME for the report's bundle of Vega: bundled once for the module."""
    return tmp_path_factory.mktemp("xdg")


def test_petsync_report_reads_the_history_on_the_store_into_a_local_file(
    emulated: EmulatedBucket, tmp_path: Path, bundle_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(bundle_home))
    local = tmp_path / "local"
    for n, (date, rows, complete) in enumerate(random_nights(7, nights=3, pets=12)):
        publish_snapshot(tmp_path / f"night{n}", date, rows, complete=complete)
        publish_snapshot(local, date, rows, complete=complete)
        upload(tmp_path / f"night{n}", emulated)
    update_history(emulated.uri())
    update_history(local)
    page = tmp_path / "report.html"

    result = CliRunner().invoke(cli, ["report", emulated.uri(), "-o", str(page)])

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{page}: 5 charts over 3 nights")
    assert f"petsync history of {emulated.uri()}" in page.read_text(encoding="utf-8")
    remote, here = report_data(emulated.uri()), report_data(local)
    for name in ("counts", "churn", "moves", "sold"):
        assert getattr(remote.catalogue, name).equals(getattr(here.catalogue, name)), name
    assert remote.quality.equals(here.quality) and remote.lookup == here.lookup


def test_the_abfs_spelling_of_the_container_keeps_the_same_history(
    azure: EmulatedBucket, tmp_path: Path
) -> None:
    publish_snapshot(tmp_path, START, [(1, "Rex", 1, "available")])
    upload(tmp_path, azure)
    abfs = f"abfs://{azure.name}@{AZURITE_ACCOUNT}.dfs.core.windows.net/petsync"

    report = update_history(abfs)

    assert report.path == f"{abfs}/history" and report.versions == 1
    assert update_history(azure.uri()).nights == ()  # az:// sees the same table
    assert load_history(abfs).equals(load_history(azure.uri()))


def test_petsync_report_of_a_store_without_output_exits_2_asking_for_one(
    emulated: EmulatedBucket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish_snapshot(tmp_path / "night", START, [(1, "Rex", 1, "available")])
    upload(tmp_path / "night", emulated)
    update_history(emulated.uri())
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)

    result = CliRunner().invoke(cli, ["report", emulated.uri()])

    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"Error: cannot write the report beside the history at {emulated.uri()}: the report "
        "is one local file; pass --output with a local path, for example "
        "--output report.html"
    )
    assert list(here.iterdir()) == []  # nothing written here either
