"""`petsync run`, `run --check` and `config show` through click's CliRunner.

The job files of ``jobs/`` run unchanged against the reference server: the working
directory's ``petsync.toml`` names the server as the production environment and the key comes
from ``PETSYNC_PRODUCTION_API_KEY``, as on a real host.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from prometheus_client.parser import text_string_to_metric_families

from petsync.cli import cli
from petsync.cli.run import job_parameters, option_spec
from petsync.core.interface import PAGINATION_STYLES
from petsync.core.models import STATUS_VALUES
from petsync.export.config import EXPORT_FORMATS
from petsync.ops.jobfile import AFTER_KEYS
from petsync.server.runner import RunningServer

REPO = Path(__file__).resolve().parents[2]
JOB_FILES = sorted((REPO / "jobs").glob("*.toml"))
IMPORT_CSV = "name,categoryId,status\nRex,1,available\nMia,2,\nBo,3,sold\n"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory and home: no config file or key leaks in from outside."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for name in list(os.environ):
        if name.startswith("PETSYNC_"):
            monkeypatch.delenv(name)
    return work


def install_jobs(work: Path, srv: RunningServer) -> None:
    """Lay out a working directory the way the README tells an operator to."""
    (work / "jobs").mkdir()
    for path in JOB_FILES:
        shutil.copy(path, work / "jobs" / path.name)
    for folder in ("metrics", "inbox", "imports", "logs", "run"):
        (work / folder).mkdir()
    (work / "inbox" / "new-animals.csv").write_text(IMPORT_CSV, encoding="utf-8")
    (work / "petsync.toml").write_text(
        f'[environments.production]\nbase_url = "{srv.base_url}"\n', encoding="utf-8"
    )


def invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, args, env=env or {})


def metrics(path: Path) -> dict[str, float]:
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(path.read_text())
        for sample in family.samples
    }


@pytest.mark.parametrize("job_file", JOB_FILES, ids=[p.stem for p in JOB_FILES])
def test_each_job_file_passes_check(
    workdir: Path, petstore_server: Callable[..., RunningServer], job_file: Path
) -> None:
    srv = petstore_server()
    install_jobs(workdir, srv)
    key = srv.api_key.reveal()
    result = invoke(
        ["run", "--check", f"jobs/{job_file.name}"], {"PETSYNC_PRODUCTION_API_KEY": key}
    )
    assert result.exit_code == 0, result.output
    kind = "export" if "export" in job_file.stem else "import"
    lines = result.stdout.splitlines()
    assert lines[0] == f"jobs/{job_file.name}: {kind} job {job_file.stem!r} is valid"
    assert lines[1] == f"  environment   production  [job file jobs/{job_file.name}]"
    assert lines[3] == (
        f"  base URL      {srv.base_url}  "
        f"[{workdir / 'petsync.toml'} [environments.production] base_url]"
    )
    assert lines[4] == "  API key       *** (hidden)  [PETSYNC_PRODUCTION_API_KEY]"
    assert key not in result.output
    # --check runs nothing: no pet created, no snapshot, no metrics written.
    assert srv.store.count() == 0
    assert not (workdir / "snapshots").exists()
    assert list((workdir / "metrics").iterdir()) == []


def test_nightly_export_job_runs_against_the_reference_server(
    workdir: Path, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server(seed_pets=120)
    install_jobs(workdir, srv)
    result = invoke(
        ["run", "jobs/nightly-export.toml"],
        {"PETSYNC_PRODUCTION_API_KEY": srv.api_key.reveal()},
    )
    assert result.exit_code == 0, result.output
    (snapshot,) = (workdir / "snapshots" / "pets").iterdir()
    # A person running the job by hand gets the text summary.
    assert result.stdout.splitlines()[-1] == f"written to {snapshot.relative_to(workdir)}"
    assert (snapshot / "pets.parquet").is_file() and (snapshot / "_manifest.json").is_file()
    samples = metrics(workdir / "metrics" / "petsync-nightly-export.prom")
    assert samples["petsync_pets_exported"] == 120
    assert samples["petsync_complete"] == 1
    assert samples["petsync_exit_code"] == 0
    text = (workdir / "metrics" / "petsync-nightly-export.prom").read_text()
    assert 'petsync_pets_exported{petsync_job="nightly-export"} 120' in text


def test_bulk_import_job_runs_against_the_reference_server(
    workdir: Path, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server()
    install_jobs(workdir, srv)
    env = {"PETSYNC_PRODUCTION_API_KEY": srv.api_key.reveal()}
    result = invoke(["run", "--json", "jobs/bulk-import.toml"], env)
    assert result.exit_code == 0, result.output
    # Rows go out concurrently, so ids follow arrival order, not row order.
    assert sorted(pet.name for pet in srv.store.all()) == ["Bo", "Mia", "Rex"]
    # Every row created: the file and its outputs moved to archive/YYYY-MM-DD/, inbox empty.
    (archived,) = (workdir / "archive").iterdir()
    assert sorted(p.name for p in archived.iterdir()) == [
        "new-animals.accepted.csv",
        "new-animals.csv",
    ]
    assert list((workdir / "inbox").iterdir()) == []
    report = json.loads((workdir / "imports" / "bulk-import.report.json").read_text())
    assert report["imports"][0]["created"] == 3
    samples = metrics(workdir / "metrics" / "petsync-bulk-import.prom")
    assert (samples["petsync_rows_created"], samples["petsync_rows_rejected"]) == (3, 0)
    assert samples["petsync_rows_uncertain"] == 0
    # The next day: an empty inbox is nothing to do; the same bytes again create nothing.
    empty = invoke(["run", "--json", "jobs/bulk-import.toml"], env)
    assert empty.exit_code == 0  # stdout holds the one JSON document: no file, nothing done
    assert json.loads(empty.stdout) == {"imports": [], "not_imported": [], "exit_code": 0}
    (workdir / "inbox" / "new-animals.csv").write_text(IMPORT_CSV, encoding="utf-8")
    again = invoke(["run", "--json", "jobs/bulk-import.toml"], env)
    assert again.exit_code == 0, again.output
    (same,) = json.loads(again.stdout)["imports"]
    assert (same["created"], same["already_created"]) == (0, 3)  # the same bytes: nothing new
    assert srv.store.count() == 3
    # A new file under the same name is a new import.
    (workdir / "inbox" / "new-animals.csv").write_text("name,categoryId\nKit,4\n")
    third = invoke(["run", "--json", "jobs/bulk-import.toml"], env)
    assert third.exit_code == 0, third.output
    assert srv.store.count() == 4
    assert len(list((workdir / "archive").iterdir())) == 3  # one folder per same-day archive


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--dry-run", "jobs/bulk-import.toml"],
        ["import", "inbox/new-animals.csv", "--dry-run", "--metrics-file", "METRICS"],
    ],
    ids=["run-job", "import-command"],
)
def test_a_dry_run_leaves_the_metrics_file_unchanged(
    workdir: Path, petstore_server: Callable[..., RunningServer], args: list[str]
) -> None:
    srv = petstore_server()
    install_jobs(workdir, srv)
    prom = workdir / "metrics" / "petsync-bulk-import.prom"
    before = (
        "# TYPE petsync_last_completed_timestamp_seconds gauge\n"
        'petsync_last_completed_timestamp_seconds{petsync_job="bulk-import"} 1795833000\n'
    )
    prom.write_text(before, encoding="utf-8")

    result = invoke([str(prom) if a == "METRICS" else a for a in args])

    assert result.exit_code == 0, result.output
    assert prom.read_text(encoding="utf-8") == before
    assert srv.store.count() == 0


def test_failed_run_keeps_the_last_success_in_the_metrics(
    workdir: Path, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server(seed_pets=5)
    install_jobs(workdir, srv)
    ok = invoke(["run", "jobs/nightly-export.toml"], {"PETSYNC_API_KEY": srv.api_key.reveal()})
    assert ok.exit_code == 0, ok.output
    path = workdir / "metrics" / "petsync-nightly-export.prom"
    success = metrics(path)["petsync_last_success_timestamp_seconds"]
    refused = invoke(["run", "jobs/nightly-export.toml"], {"PETSYNC_API_KEY": "wrong-key"})
    assert refused.exit_code == 3, refused.output
    after = metrics(path)
    assert after["petsync_last_success_timestamp_seconds"] == success
    assert after["petsync_last_run_timestamp_seconds"] >= success
    assert (after["petsync_exit_code"], after["petsync_complete"]) == (3, 0)
    assert "petsync_pets_exported" not in after


def test_json_logs_keep_stderr_one_object_per_line(
    workdir: Path, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server(seed_pets=30)
    install_jobs(workdir, srv)
    args = [
        *("--log-format", "json", "--log-level", "info"),
        *("run", "--json", "jobs/nightly-export.toml"),
    ]
    result = invoke(args, {"PETSYNC_API_KEY": srv.api_key.reveal()})
    assert result.exit_code == 0, result.output
    entries = [json.loads(line) for line in result.stderr.splitlines()]
    assert {"time", "level", "logger", "event", "fields"} <= set(entries[0])
    (summary,) = [json.loads(line) for line in result.stdout.splitlines()]  # stdout too
    assert summary["pets"] == 30
    published = [e for e in entries if e["event"] == "export.published"]
    assert published and published[0]["fields"]["pets"] == 30
    refused = invoke(args, {"PETSYNC_API_KEY": "wrong-key"})
    assert refused.exit_code == 3
    *_, last = [json.loads(line) for line in refused.stderr.splitlines()]
    assert (last["level"], last["event"]) == ("error", "error")
    assert last["fields"]["exit_code"] == 3
    assert last["fields"]["error"] == "AuthenticationError"


@pytest.mark.parametrize(
    ("option", "json_key", "expect_json"),
    [
        ([], "", False),
        (["--json"], "", True),
        ([], "json = true", True),
        (["--text"], "json = true", False),
    ],
    ids=["text-by-default", "json-asked", "json-in-the-job", "text-over-the-job"],
)
def test_run_json_and_text_win_over_the_job_file(
    workdir: Path,
    petstore_server: Callable[..., RunningServer],
    option: list[str],
    json_key: str,
    expect_json: bool,
) -> None:
    srv = petstore_server(seed_pets=7)
    install_jobs(workdir, srv)
    job = write_job(workdir, f'[export]\nout = "snapshots"\n{json_key}\n')

    result = invoke(["run", *option, str(job)], {"PETSYNC_API_KEY": srv.api_key.reveal()})

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    if expect_json:
        (summary,) = lines
        assert json.loads(summary)["pets"] == 7
    else:
        assert lines[0].startswith("snapshot ") and "7 pets" in lines[0]


def test_run_check_whose_settings_fail_never_says_valid(workdir: Path) -> None:
    job = write_job(workdir, '[export]\nout = "snapshots"\n')

    result = invoke(["run", "--check", str(job)], {"PETSYNC_BASE_URL": "https://x.example/v1"})

    assert result.exit_code == 2
    assert result.stdout == ""
    assert "is valid" not in result.output
    assert result.stderr.startswith("Error: ")


def test_a_locked_run_with_json_logs_writes_json_lines_only(
    workdir: Path, petstore_server: Callable[..., RunningServer]
) -> None:
    from petsync.storage.lock import DirectoryLock

    srv = petstore_server(seed_pets=5)
    install_jobs(workdir, srv)
    args = [
        *("--log-format", "json", "--log-level", "info"),
        *("run", "--json", "jobs/nightly-export.toml"),
    ]
    with DirectoryLock(workdir / "snapshots"):
        result = invoke(args, {"PETSYNC_API_KEY": srv.api_key.reveal()})

    assert result.exit_code == 75
    assert result.stdout == ""
    entries = [json.loads(line) for line in result.stderr.splitlines()]  # JSON lines only
    assert entries[-1]["fields"]["error"] == "LockedError"
    assert "holds the lock" in entries[-1]["fields"]["message"]


def test_run_options_win_over_the_job_file(
    workdir: Path, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server()
    install_jobs(workdir, srv)
    with (workdir / "petsync.toml").open("a", encoding="utf-8") as handle:
        handle.write('[environments.staging]\nbase_url = "https://staging.example.com/v1"\n')
    result = invoke(
        ["run", "--check", "--env", "staging", "jobs/nightly-export.toml"],
        {"PETSYNC_STAGING_API_KEY": "staging-key"},
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1] == "  environment   staging  [--env]"
    assert lines[3].startswith("  base URL      https://staging.example.com/v1  [")
    assert lines[4] == "  API key       *** (hidden)  [PETSYNC_STAGING_API_KEY]"


def write_job(work: Path, text: str) -> Path:
    path = work / "broken.toml"
    path.write_text(text, encoding="utf-8")
    return path


def export_keys() -> str:
    after = [spec.key for spec in AFTER_KEYS["export"]]  # update_history
    return ", ".join(sorted([*job_parameters(cli.commands["export"]), *after]))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[export]\nout = "s"\nout_dir = "s"\n',
            "job file broken.toml [export]: unknown key 'out_dir'; allowed keys: {keys}",
        ),
        (
            '[export]\nout = "s"\nkeep = "thirty"\n',
            'job file broken.toml [export]: keep must be an integer, got "thirty" (string)',
        ),
        (
            '[export]\nout = "s"\nformat = "csv"\n',
            'job file broken.toml [export]: format must be one of: parquet, both, got "csv" '
            "(string)",
        ),
        (
            "[export]\nkeep = 3\n",
            "job file broken.toml [export]: missing required key 'out' (Snapshot directory, "
            "or an s3://, gs://, abfs:// or az:// URI; each run writes "
            "OUT/pets/snapshot_date=YYYY-MM-DD/.); it takes a path (string)",
        ),
        (
            '[export]\nout = "s"\nkeep = 0\n',
            "job file broken.toml [export]: keep: 0 is not in the range x>=1.",
        ),
        (
            '[import]\nfile = "x.csv"\napi_key = "sk-live"\n',
            "job file broken.toml [import]: 'api_key' would put an API key in a file others "
            "read, copy and commit; set the key in the environment (PETSYNC_API_KEY or "
            "PETSYNC_<ENV>_API_KEY, e.g. from the env file cron loads) or point api_key_file "
            "at a file with mode 600",
        ),
    ],
    ids=["unknown-key", "wrong-type", "not-a-choice", "missing-key", "out-of-range", "api-key"],
)
def test_invalid_job_file_exits_2_naming_file_and_key(
    workdir: Path, text: str, message: str
) -> None:
    write_job(workdir, text)
    for args in (["run", "--check", "broken.toml"], ["run", "broken.toml"]):
        result = invoke(args, {"PETSYNC_API_KEY": "k", "PETSYNC_BASE_URL": "http://127.0.0.1:9/v1"})
        assert result.exit_code == 2
        assert result.stderr == f"Error: {message.format(keys=export_keys())}\n"
        assert result.stdout == ""


def test_job_keys_are_the_long_option_names(workdir: Path) -> None:
    keys = set(job_parameters(cli.commands["export"]))
    assert {"out", "status", "max_drop", "metrics_file", "env", "config", "base_url"} <= keys
    assert "out_dir" not in keys and "statuses" not in keys
    import_keys = set(job_parameters(cli.commands["import"]))
    assert {"file", "map", "journal", "report", "dry_run", "max_errors"} <= import_keys


CONFIG = """
[environments.production]
base_url = "https://petstore.example.com/v1"

[environments.staging]
base_url = "https://staging.petstore.example.com/v1"
api_key_file = "staging.key"
"""


def test_config_show_redacts_the_key_and_names_every_source(workdir: Path) -> None:
    (workdir / "petsync.toml").write_text(CONFIG, encoding="utf-8")
    key = "sk-CONFIG-SHOW-CANARY"
    result = invoke(["config", "show"], {"PETSYNC_PRODUCTION_API_KEY": key})
    assert result.exit_code == 0, result.output
    config = workdir / "petsync.toml"
    assert result.stdout.splitlines() == [
        "environment   production  [default]",
        f"config file   {config}  [working directory]",
        "base URL      https://petstore.example.com/v1  "
        f"[{config} [environments.production] base_url]",
        "API key       *** (hidden)  [PETSYNC_PRODUCTION_API_KEY]",
        "insecure http refused to non-loopback hosts  [default]",
        "timeout       60 s a request  [default]",
        "retries       5  [default]",
        "retry budget  300 s  [default]",
        "max response  32 MiB  [default]",
        "ready: a command has the base URL and key it needs",
    ]
    assert key not in result.output


def test_config_show_with_env_reads_the_environments_key_file(workdir: Path) -> None:
    (workdir / "petsync.toml").write_text(CONFIG, encoding="utf-8")
    key_file = workdir / "staging.key"
    key_file.write_text("sk-STAGING-FILE")
    key_file.chmod(0o600)
    result = invoke(["config", "show", "--env", "staging"], {"PETSYNC_API_KEY": "generic"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "environment   staging  [--env]"
    assert (
        lines[3] == f"API key       *** (hidden)  [[environments.staging] api_key_file {key_file}]"
    )
    assert "sk-STAGING-FILE" not in result.output


def test_petsync_env_and_petsync_config_choose_as_the_options_would(
    workdir: Path, tmp_path: Path
) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text(
        '[environments.production]\nbase_url = "https://o.example.com/v1"\n'
        '[environments.staging]\nbase_url = "https://staging.o.example.com/v1"\n'
    )
    env = {"PETSYNC_ENV": "staging", "PETSYNC_CONFIG": str(other), "PETSYNC_API_KEY": "k"}
    result = invoke(["config", "show"], env)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "environment   staging  [PETSYNC_ENV]"
    assert lines[1] == f"config file   {other}  [PETSYNC_CONFIG]"
    given = invoke(["config", "show", "--env", "production"], env).stdout.splitlines()
    assert given[0] == "environment   production  [--env]"
    assert given[2].startswith("base URL      https://o.example.com/v1  ")


def test_config_show_refuses_a_key_file_others_can_read(workdir: Path) -> None:
    (workdir / "petsync.toml").write_text(CONFIG, encoding="utf-8")
    key_file = workdir / "staging.key"
    key_file.write_text("sk-STAGING-FILE")
    key_file.chmod(0o644)
    result = invoke(["config", "show", "--env", "staging", "--check"])
    assert result.exit_code == 2
    refusal = (
        f"API key file {key_file} is readable by group or others (mode 644); "
        f"fix it with: chmod 600 {key_file}"
    )
    assert result.stderr == f"Error: not ready: {refusal}\n"
    assert f"  - {refusal}" in result.stdout.splitlines()
    assert (
        "API key       not set  [refused: see what a command would still need]"
        in result.stdout.splitlines()
    )


def test_config_option_points_at_another_file(workdir: Path, tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text('[environments.production]\nbase_url = "https://other.example.com/v1"\n')
    result = invoke(["config", "show", "--config", str(other)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1] == f"config file   {other}  [--config]"
    assert lines[2].startswith("base URL      https://other.example.com/v1  [")
    assert lines[3] == (
        "API key       not set: set PETSYNC_PRODUCTION_API_KEY or PETSYNC_API_KEY, "
        "or pass --api-key-file PATH  [nowhere]"
    )


def test_plain_http_to_a_remote_host_needs_the_flag(workdir: Path) -> None:
    args = ["config", "show", "--base-url", "http://petstore.example.com/v1"]
    refused = invoke([*args, "--check"])
    assert refused.exit_code == 2
    assert "uses plain http to a host that is not loopback" in refused.stderr
    assert refused.stderr.endswith("(base URL from --base-url)\n")
    allowed = invoke([*args, "--allow-insecure-http"])
    assert allowed.exit_code == 0, allowed.output
    assert "insecure http allowed  [--allow-insecure-http]" in allowed.stdout


def test_flag_beats_variable_beats_config_file(workdir: Path) -> None:
    (workdir / "petsync.toml").write_text(CONFIG, encoding="utf-8")
    env: dict[str, Any] = {"PETSYNC_BASE_URL": "https://var.example.com/v1"}
    by_var = invoke(["config", "show"], env).stdout.splitlines()[2]
    assert by_var == "base URL      https://var.example.com/v1  [PETSYNC_BASE_URL]"
    by_flag = invoke(["config", "show", "--base-url", "https://flag.example.com/v1"], env)
    assert by_flag.stdout.splitlines()[2] == (
        "base URL      https://flag.example.com/v1  [--base-url]"
    )


def test_export_command_metrics_file_is_labelled_export(
    workdir: Path, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server(seed_pets=7)
    env = {"PETSYNC_BASE_URL": srv.base_url, "PETSYNC_API_KEY": srv.api_key.reveal()}
    result = invoke(["export", "--out", "snaps", "--metrics-file", "export.prom"], env)
    assert result.exit_code == 0, result.output
    assert 'petsync_pets_exported{petsync_job="export"} 7' in (workdir / "export.prom").read_text()


def test_metrics_directory_missing_fails_before_the_run(
    workdir: Path, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server(seed_pets=7)
    env = {"PETSYNC_BASE_URL": srv.base_url, "PETSYNC_API_KEY": srv.api_key.reveal()}
    result = invoke(["export", "--out", "snaps", "--metrics-file", "nope/export.prom"], env)
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: metrics file nope/export.prom: directory nope does not exist; create it or "
        "point --metrics-file at node_exporter's textfile directory\n"
    )
    assert not (workdir / "snaps").exists()


def test_import_job_with_a_rejected_row_exits_4_and_records_the_counts(
    workdir: Path, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server()
    install_jobs(workdir, srv)
    (workdir / "inbox" / "new-animals.csv").write_text(
        IMPORT_CSV + "Kit,not-a-number,\n", encoding="utf-8"
    )
    result = invoke(
        ["run", "--json", "jobs/bulk-import.toml"], {"PETSYNC_API_KEY": srv.api_key.reveal()}
    )
    assert result.exit_code == 4, result.output
    assert result.stderr == ""  # the summary says what is left; no error line
    (archived,) = (workdir / "archive").iterdir()  # rejected rows are final: archived too
    summary = json.loads(result.stdout)  # run --json, as cron runs it; FILE is a glob
    (only,) = summary["imports"]
    assert only["files"]["rejects"] == f"archive/{archived.name}/new-animals.rejects.csv"
    assert (only["rejected_local"], summary["exit_code"]) == (1, 4)
    assert srv.store.count() == 3
    samples = metrics(workdir / "metrics" / "petsync-bulk-import.prom")
    assert samples["petsync_rows_created"] == 3
    assert samples["petsync_rows_rejected"] == 1
    assert samples["petsync_rows_uncertain"] == 0
    assert (samples["petsync_exit_code"], samples["petsync_complete"]) == (4, 0)
    assert "petsync_last_success_timestamp_seconds" not in samples
    # The job worked: the "no completed run for 26 h" alert stays quiet.
    assert (
        samples["petsync_last_completed_timestamp_seconds"]
        == (samples["petsync_last_run_timestamp_seconds"])
    )


def test_run_base_url_and_key_file_win_over_the_job_files_environment(
    workdir: Path, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server()
    install_jobs(workdir, srv)
    key_file = workdir / "other.key"
    key_file.write_text("other-key\n")
    key_file.chmod(0o600)
    result = invoke(
        [
            "run",
            "--check",
            "--base-url",
            "https://other.example.com/v1",
            "--api-key-file",
            str(key_file),
            "jobs/nightly-export.toml",
        ],
        {"PETSYNC_PRODUCTION_API_KEY": "production-key"},
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1] == "  environment   production  [job file jobs/nightly-export.toml]"
    assert lines[3] == "  base URL      https://other.example.com/v1  [--base-url]"
    assert lines[4] == f"  API key       *** (hidden)  [--api-key-file {key_file}]"


def test_metrics_unwritable_after_a_failed_run_shows_both_errors_and_keeps_its_code(
    workdir: Path,
    petstore_server: Callable[..., RunningServer],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    srv = petstore_server(seed_pets=3)
    env = {"PETSYNC_BASE_URL": srv.base_url, "PETSYNC_API_KEY": "wrong-key"}

    def no_space(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    # The refused run writes nothing but the metrics file, so only that rename fails.
    monkeypatch.setattr(os, "replace", no_space)
    result = invoke(["export", "--out", "snaps", "--metrics-file", "export.prom"], env)
    assert result.exit_code == 3
    first, second = result.stderr.splitlines()
    assert first == "Error: cannot write metrics file export.prom: No space left on device"
    assert second.startswith(f"Error: the API at {srv.base_url} refused the API key (HTTP 401")
    assert [p.name for p in workdir.iterdir() if "prom" in p.name] == []  # no file, no temp


SPEC_CASES = [
    ("export", "out", "path", False, True, ()),
    ("export", "status", "choice", True, False, STATUS_VALUES),
    ("export", "format", "choice", False, False, EXPORT_FORMATS),
    ("export", "pagination", "choice", False, False, PAGINATION_STYLES),
    ("export", "sweep", "boolean", False, False, ()),
    ("export", "allow_insecure_http", "boolean", False, False, ()),
    ("export", "keep", "integer", False, False, ()),
    ("export", "max_drop", "string", False, False, ()),
    ("export", "metrics_file", "path", False, False, ()),
    ("import", "file", "string", True, True, ()),  # FILE... or a glob
    ("import", "map", "string", True, False, ()),
    ("import", "concurrency", "integer", False, False, ()),
]


@pytest.mark.parametrize(
    ("command", "key", "kind", "multiple", "required", "choices"),
    SPEC_CASES,
    ids=[f"{case[0]}-{case[1]}" for case in SPEC_CASES],
)
def test_each_job_key_takes_what_its_option_takes(
    command: str,
    key: str,
    kind: str,
    multiple: bool,
    required: bool,
    choices: tuple[str, ...],
) -> None:
    param = job_parameters(cli.commands[command])[key]
    spec = option_spec(key, param)
    assert (spec.key, spec.kind, spec.multiple, spec.required) == (key, kind, multiple, required)
    assert spec.choices == choices
