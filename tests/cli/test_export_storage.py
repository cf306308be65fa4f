"""`petsync export --out URI`, `diff --dir URI`, Delta tables and job files, through CliRunner.

S3 is moto's server on loopback (the ``s3`` fixture: fake credentials, the loopback endpoint,
no metadata endpoint); the lock makes its own botocore client from the environment here, as
in production. Refusals are checked with no API reachable at all: the ``api`` fixture answers
every request and the tests assert none was made.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import respx
from click.testing import CliRunner, Result
from deltalake import DeltaTable

from petsync.cli import cli
from petsync.core.models import Pet
from petsync.formats.snapshots import list_snapshots, load_snapshot
from petsync.storage.layout import STAGING_DIR
from petsync.storage.location import parse_location
from petsync.storage.lock import LOCK_NAME
from petsync.storage.store import object_lock
from tests.conftest import S3Bucket, route_clients_to

TODAY = dt.datetime.now(dt.UTC).date()
KEY = "sk-STORAGE-CANARY-7373"
BASE = "https://petstore.test/v1"
ACCEPTED = "use a local path, file://, s3://, gs://, abfs:// or az://"


def invoke(args: list[str], srv: Any = None) -> Result:
    env = {"PETSYNC_API_KEY": KEY, "PETSYNC_BASE_URL": BASE}
    if srv is not None:
        env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}
    return CliRunner().invoke(cli, args, env=env)


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[respx.MockRouter]:
    """No request may reach the API: every route answers, and the tests assert none did."""
    with respx.mock(assert_all_called=False) as router:
        route_clients_to(router, monkeypatch)
        router.route().respond(500)
        yield router


# -- --out on S3 ---------------------------------------------------------------------------


def test_export_to_s3_writes_the_snapshot_and_says_where(
    petstore_server: Any, isolated: Path, s3: S3Bucket
) -> None:
    srv = petstore_server(seed_pets=30)

    result = invoke(["export", "--out", s3.uri()], srv)

    assert result.exit_code == 0, result.output
    partition = f"{s3.uri()}/pets/snapshot_date={TODAY}"
    assert result.stdout.splitlines()[2] == f"written to {partition}"
    assert s3.object_keys("petsync/") == [
        f"petsync/pets/snapshot_date={TODAY}/{name}"
        for name in ("_manifest.json", "_pets.csv", "_quarantine.jsonl", "pets.parquet")
    ]
    assert len(load_snapshot(s3.uri())) == 30
    assert not Path("s3:").exists()  # never a local folder named after the scheme


def test_export_to_a_missing_bucket_exits_2_before_any_request(
    api: respx.MockRouter, isolated: Path, s3: S3Bucket
) -> None:
    result = invoke(["export", "--out", "s3://no-such-bucket-here/petsync"])

    assert result.exit_code == 2
    assert result.stderr == (
        "Error: cannot use --out s3://no-such-bucket-here/petsync: bucket "
        "'no-such-bucket-here' does not exist (or these credentials cannot see it); create "
        "it or fix the location. Nothing was fetched.\n"
    )
    assert not api.calls


def test_export_to_a_locked_s3_location_exits_75_naming_the_lock_and_its_expiry(
    api: respx.MockRouter, isolated: Path, s3: S3Bucket
) -> None:
    holder = object_lock(parse_location(s3.uri()), client=s3.client)
    holder.acquire()

    result = invoke(["export", "--out", s3.uri()])

    assert result.exit_code == 75
    lock = f"{s3.uri()}/{LOCK_NAME}"
    assert result.stderr.startswith(
        f"Error: another petsync run is writing to {s3.uri()} (it holds the lock {lock}: host "
    )
    assert "; it expires at " in result.stderr
    assert result.stderr.endswith(
        f"if that run was killed, the lock frees itself when it expires, or delete {lock} "
        "once you are sure no run is writing.\n"
    )
    assert not api.calls
    holder.release()


@pytest.mark.parametrize(
    ("out", "message"),
    [
        (
            "ftp://x",
            f"--out ftp://x: petsync cannot write snapshots to ftp:// locations; {ACCEPTED}",
        ),
        (
            "s3://AKIAEXAMPLE:hunter2-secret@bucket/petsync",
            "--out: the location carries credentials; remove them from the URI and let the "
            "store's standard chain provide them (for S3: AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or an instance or pod role)",
        ),
        (
            "s3://bucket/petsync?endpoint=http://minio:9000&secret=hunter2-secret",
            "--out s3://bucket/petsync: settings in the URI (?...) are not read; set them in "
            "the environment instead (for S3-compatible stores AWS_ENDPOINT_URL and AWS_REGION)",
        ),
    ],
    ids=["unsupported-scheme", "credentials", "settings"],
)
def test_a_refused_out_uri_exits_2_before_any_request_without_echoing_secrets(
    api: respx.MockRouter, isolated: Path, out: str, message: str
) -> None:
    result = invoke(["export", "--out", out])

    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"Error: Invalid value for '--out': {message}"
    assert "hunter2" not in result.stderr + result.stdout
    assert not api.calls
    assert list(Path(".").iterdir()) == []  # no folder named ftp: or s3:


# -- links where petsync stages and locks --------------------------------------------------


def test_a_link_at_the_staging_folder_exits_2_and_its_target_keeps_its_files(
    api: respx.MockRouter, isolated: Path
) -> None:
    Path("out").mkdir()
    Path("precious").mkdir()
    Path("precious/thesis.txt").write_text("years of work\n")
    Path("out", STAGING_DIR).symlink_to(Path("precious").absolute(), target_is_directory=True)

    result = invoke(["export", "--out", "out"])

    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: out/{STAGING_DIR} is a symbolic link; petsync stages snapshots there and "
        "deletes what it finds, so it never follows a link there. Remove it (a run "
        "re-creates the folder) and run again.\n"
    )
    assert not api.calls
    assert [p.name for p in Path("precious").iterdir()] == ["thesis.txt"]
    assert Path("precious/thesis.txt").read_text() == "years of work\n"


def test_a_link_at_the_lock_file_exits_2_and_its_target_keeps_its_content(
    api: respx.MockRouter, isolated: Path
) -> None:
    Path("out").mkdir()
    Path("notes.txt").write_text("do not truncate\n")
    Path("out", LOCK_NAME).symlink_to(Path("notes.txt").absolute())

    result = invoke(["export", "--out", "out"])

    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: the lock file out/{LOCK_NAME} is a symbolic link; petsync writes its pid "
        "there and never follows a link. Remove the link and run again.\n"
    )
    assert not api.calls
    assert Path("notes.txt").read_text() == "do not truncate\n"


# -- Delta tables --------------------------------------------------------------------------


def test_export_table_format_delta_commits_one_version_per_run(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server(seed_pets=25)

    first = invoke(["export", "--out", "out", "--table-format", "delta"], srv)
    second = invoke(["export", "--out", "out", "--table-format", "delta", "--json"], srv)

    assert first.exit_code == 0, first.output
    assert first.stdout.splitlines()[2] == f"written to {Path('out').absolute() / 'pets'}"
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout)["pets"] == 25
    assert DeltaTable("out/pets").version() == 1
    assert DeltaTable("out/pets").metadata().partition_columns == ["snapshot_date"]
    assert not list(Path("out/pets").glob("snapshot_date=*/_pets.csv"))  # no CSV in a table
    assert len(load_snapshot("out")) == 25
    assert load_snapshot("out", version=0).attrs["snapshot_date"] == TODAY.isoformat()


# -- diff on S3 ----------------------------------------------------------------------------


def test_diff_dir_on_s3(petstore_server: Any, isolated: Path, s3: S3Bucket) -> None:
    from petsync.client.config import ClientConfig
    from petsync.export.config import ExportConfig
    from petsync.export.run import run_export

    srv = petstore_server()
    for pet in [Pet(1, "Rex", 1, "available"), Pet(2, "Tom", 1, "available")]:
        srv.store.insert(pet)
    config = ExportConfig(client=ClientConfig(srv.base_url, srv.api_key), out_dir=s3.uri())
    run_export(config, today=dt.date(2026, 11, 21))
    srv.store.insert(Pet(3, "Kit", 1, "sold"))
    run_export(config, today=dt.date(2026, 11, 22))

    result = CliRunner().invoke(cli, ["diff", "2026-11-21", "2026-11-22", "--dir", s3.uri()])

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"from 2026-11-21 ({s3.uri()}/pets/snapshot_date=2026-11-21) to 2026-11-22 "
        f"({s3.uri()}/pets/snapshot_date=2026-11-22)",
        "added:         1",
        "removed:       0",
        "renamed:       0",
        "recategorised: 0",
        "status changes: 0",
    ]


def test_diff_dir_with_an_unsupported_scheme_exits_2(isolated: Path) -> None:
    result = CliRunner().invoke(cli, ["diff", "2026-11-21", "2026-11-22", "--dir", "ftp://x"])

    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f"Error: Invalid value for '--dir': --dir ftp://x: petsync cannot write snapshots to "
        f"ftp:// locations; {ACCEPTED}"
    )


# -- job files -----------------------------------------------------------------------------


def job_file(out: str) -> Path:
    path = Path("jobs/nightly.toml")
    path.parent.mkdir(exist_ok=True)
    path.write_text(f'[export]\nout = "{out}"\nkeep = 7\n', encoding="utf-8")
    return path


def test_a_job_file_with_an_s3_out_checks_and_runs(
    petstore_server: Any, isolated: Path, s3: S3Bucket
) -> None:
    srv = petstore_server(seed_pets=12)
    path = job_file(s3.uri())

    checked = invoke(["run", "--check", str(path)], srv)
    ran = invoke(["run", str(path)], srv)

    assert checked.exit_code == 0, checked.output
    assert f'  out = "{s3.uri()}"' in checked.stdout.splitlines()
    assert ran.exit_code == 0, ran.output
    assert [(s.date, s.pets) for s in list_snapshots(s3.uri())] == [(TODAY, 12)]


def test_a_job_file_with_an_unsupported_out_exits_2_naming_the_file_and_key(
    api: respx.MockRouter, isolated: Path
) -> None:
    path = job_file("ftp://x")

    result = invoke(["run", str(path)])

    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: job file {path} [export]: out: --out ftp://x: petsync cannot write "
        f"snapshots to ftp:// locations; {ACCEPTED}\n"
    )
    assert not api.calls
