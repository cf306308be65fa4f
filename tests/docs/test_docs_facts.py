"""Facts the docs state that the code, the crontab or the job files decide: they must agree."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.core.errors import ExitCode
from petsync.demo import run_demo
from petsync.ops.metrics import METRICS, RunMetrics, write_metrics
from tests.docs.markdown import DOCS, ROOT, fenced_blocks, section, table_rows

SCHEDULING = (DOCS / "scheduling.md").read_text(encoding="utf-8")
EXPORT = (DOCS / "export.md").read_text(encoding="utf-8")
FLOCK_SKIPPED = 75  # cron.example's `flock -n -E 75`, and petsync's own LockedError
# Exit codes of flock and the shell, before petsync runs: not petsync's, but in the mail too.
NOT_FOUND = {69: "flock could not execute petsync", 127: "the shell found no command"}


def codes(cells: str) -> list[str]:
    """The `backticked` names in a table cell."""
    return re.findall(r"`([^`]+)`", cells)


def crontab_commands() -> dict[str, str]:
    """cron.example's job lines (schedule and command) by the job file they run."""
    lines: dict[str, str] = {}
    for line in (ROOT / "cron.example").read_text(encoding="utf-8").splitlines():
        job = re.search(r" run (?:--[\w-]+ )*jobs/([\w-]+)\.toml ", line)
        if job and not line.startswith("#"):
            lines[job.group(1)] = line
    return lines


def test_exit_code_table_lists_every_exit_code() -> None:
    rows = table_rows(section(SCHEDULING, "Exit codes"))

    documented = [int(row[0]) for row in rows]

    assert FLOCK_SKIPPED in {int(code) for code in ExitCode}
    assert documented == sorted({int(code) for code in ExitCode} | set(NOT_FOUND))


def test_cron_line_tells_the_same_exit_codes() -> None:
    for job, line in crontab_commands().items():
        assert f"-E {FLOCK_SKIPPED} run/{job}.lock" in line
        for code in (1, 2, 3, 4, *NOT_FOUND, FLOCK_SKIPPED, int(ExitCode.TERMINATED)):
            assert re.search(rf"\b{code} [a-z]", line), f"{job}: exit {code} not explained"


def test_metrics_table_names_every_metric_the_file_holds() -> None:
    rows = table_rows(section(SCHEDULING, "Metrics and alerts"))

    documented = [name for row in rows for name in codes(row[0])]

    assert documented == [name for name, _ in METRICS]


SELECTOR = re.compile(r'(petsync_\w+)\{(\w+)="([^"]*)"\}')


def scraped(path: Path) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """A textfile as Prometheus stores it under honor_labels: false: its own `job`, and a
    `job` label from the file renamed to `exported_job`."""
    from prometheus_client.parser import text_string_to_metric_families

    stored: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(path.read_text()):
        for sample in family.samples:
            labels = {("exported_" + k if k == "job" else k): v for k, v in sample.labels.items()}
            stored[(sample.name, frozenset({**labels, "job": "node"}.items()))] = sample.value
    return stored


def test_documented_alerts_match_the_samples_a_run_writes(tmp_path: Path) -> None:
    """Each alert's selector finds a sample once scraped: the job-broken alert stays quiet
    after an import that rejected rows (exit 4), the rows-to-fix alert fires."""
    alerts = [b.strip() for b in fenced_blocks(section(SCHEDULING, "Metrics and alerts"), "text")]
    assert len(alerts) == 2
    path = tmp_path / "petsync.prom"
    finished = 1_800_000_000.0
    for job in crontab_commands():
        counts = {"rows_created": 5, "rows_rejected": 2, "rows_uncertain": 0}
        write_metrics(
            path, RunMetrics(job, finished, 1.0, exit_code=4, complete=False, counts=counts)
        )
    stored = scraped(path)

    values = []
    for alert in alerts:
        (selector,) = SELECTOR.findall(alert)
        name, label, job = selector
        assert job in crontab_commands()
        found = [v for (n, labels), v in stored.items() if n == name and (label, job) in labels]
        assert found, f"{alert!r} matches nothing Prometheus stores"
        values.append(found[0])
    completed, exit_code = values
    assert completed == finished  # so time() - it stays under 26 h: the job works
    assert alerts[1].endswith(f"== {int(exit_code)}")  # rows to fix: this one fires


def test_manifest_table_names_every_key_of_a_real_manifest(tmp_path: Path) -> None:
    report = run_demo(tmp_path / "out", 30)
    assert report.export.snapshot_path is not None
    manifest = json.loads((report.export.snapshot_path / "_manifest.json").read_text())

    rows = table_rows(section(EXPORT, "The manifest"))
    documented = [name for row in rows for name in codes(row[0])]

    assert documented == list(manifest)


def test_the_example_extra_fields_have_the_shape_of_a_real_manifests(tmp_path: Path) -> None:
    report = run_demo(tmp_path / "out", 30, extra_fields=True)
    assert report.export.snapshot_path is not None
    real = json.loads((report.export.snapshot_path / "_manifest.json").read_text())
    (block,) = fenced_blocks(section(EXPORT, "When the API changes"), "json")

    example = json.loads("{" + block + "}")["extra_fields"]

    section_of = real["extra_fields"]
    assert list(example) == list(section_of)
    assert [list(f) for f in example["fields"]] == [list(f) for f in section_of["fields"][:2]]
    assert {f["column"] for f in example["fields"]} <= {"string", "json"}
    assert example["appeared"] == [f["name"] for f in example["fields"]]


def test_job_file_error_shown_is_the_one_petsync_prints(isolated: Path) -> None:
    shown = next(b for b in fenced_blocks(SCHEDULING, "text") if b.startswith("Error: job file"))
    (isolated / "jobs").mkdir()
    (isolated / "jobs" / "nightly-export.toml").write_text(
        '[export]\nout = "snapshots"\nformat = "csv"\n', encoding="utf-8"
    )

    result = CliRunner().invoke(cli, ["run", "--check", "jobs/nightly-export.toml"])

    assert result.exit_code == ExitCode.USAGE
    assert result.stderr == shown


def test_where_things_go_matches_the_job_files_and_the_crontab() -> None:
    where = {row[0]: row[1] for row in table_rows(section(SCHEDULING, "Where things go"))}
    export = tomllib.loads((ROOT / "jobs" / "nightly-export.toml").read_text())["export"]
    bulk = tomllib.loads((ROOT / "jobs" / "bulk-import.toml").read_text())["import"]
    cron = crontab_commands()

    assert set(cron) == {"nightly-export", "bulk-import"}
    assert f"`{export['out']}/pets/snapshot_date=YYYY-MM-DD/`" in where["snapshots"]
    assert f"`keep = {export['keep']}`" in where["snapshots"]
    assert f"`{bulk['file']}`" in where["import input"]
    assert f"`{bulk['out_dir']}/`" in where["import outputs"]
    assert bulk["report"].startswith(bulk["out_dir"] + "/")
    assert "`metrics/petsync-<job>.prom`" in where["metrics"]
    for job, table in (("nightly-export", export), ("bulk-import", bulk)):
        assert table["metrics_file"] == f"metrics/petsync-{job}.prom"
        assert f">>logs/{job}.log 2>&1" in cron[job]
        assert f"`logs/{job}.log`" in where["logs"]
    assert "`run/<job>.lock`" in where["locks"]


def test_schedule_described_is_the_crontab_schedule() -> None:
    cron = crontab_commands()

    assert cron["nightly-export"].startswith("30 2 * * * ")
    assert cron["bulk-import"].startswith("0 7 * * 1-5 ")
    said = " ".join(SCHEDULING.split())
    assert "nightly export at 02:30 every night" in said
    assert "example import at 07:00 on weekdays" in said


def test_every_cron_line_does_what_the_page_says() -> None:
    said = section(SCHEDULING, "What each cron line does")

    for job, line in crontab_commands().items():
        assert "cd /var/lib/petsync && start=$(" in line
        assert "&& set -a && . /etc/petsync/env && set +a" in line
        assert f"petsync --log-format json --log-level info run --json jobs/{job}.toml" in line
        assert f"tail -c +$((start + 1)) logs/{job}.log | tail -n 50" in line
    for words in ("`/var/lib/petsync`", "`/etc/petsync/env`", "`set -a`", "the last 50"):
        assert words in said


def test_documented_shell_completion_completes_commands_and_options() -> None:
    lines = fenced_blocks(section(SCHEDULING, "Shell completion"), "sh")[0].splitlines()
    variables = {re.search(r"(_\w+_COMPLETE)=(\w+)", line).groups() for line in lines}  # type: ignore[union-attr]
    assert {name for name, _ in variables} == {"_PETSYNC_COMPLETE"}
    runner = CliRunner()
    for name, shell_source in sorted(variables):
        script = runner.invoke(cli, [], prog_name="petsync", env={name: shell_source})
        assert script.exit_code == 0 and "_petsync_completion" in script.output.replace("-", "_")

    def complete(words: str) -> str:
        env = {"_PETSYNC_COMPLETE": "bash_complete", "COMP_WORDS": words}
        env["COMP_CWORD"] = str(len(words.split()) - 1)
        return runner.invoke(cli, [], prog_name="petsync", env=env).output

    assert complete("petsync exp") == "plain,export\n"
    assert complete("petsync export --max-d") == "plain,--max-drop\n"


def test_config_show_example_is_what_petsync_prints_for_the_example_config(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = section(SCHEDULING, "Environments and keys")
    (toml,) = fenced_blocks(page, "toml")
    (console,) = fenced_blocks(page, "console")
    command, *shown = console.splitlines()
    work, home = isolated / "var-lib-petsync", isolated / "home-petsync"
    work.mkdir()
    (work / "petsync.toml").write_text(toml, encoding="utf-8")
    key = home / ".config" / "petsync" / "staging.key"
    key.parent.mkdir(parents=True)
    key.write_text("sk-staging")
    key.chmod(0o600)
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(home))

    result = CliRunner().invoke(cli, command.removeprefix("$ petsync ").split())

    assert result.exit_code == 0, result.output
    printed = result.stdout.replace(str(work), "/var/lib/petsync").replace(
        str(home), "/home/petsync"
    )
    assert printed.splitlines() == shown
