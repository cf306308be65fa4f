"""The same failure, told to each caller in its own terms: the command line's options,
a job file's keys (naming the file), the library's keywords."""

from __future__ import annotations

import io
import json
import logging
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.core.errors import ConfigError
from petsync.core.wording import COMMAND_LINE, job_file_terms
from petsync.ops.logs import configure_logging
from petsync.ops.metrics import check_metrics_path


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in list(os.environ):
        if name.startswith("PETSYNC_"):
            monkeypatch.delenv(name)
    return tmp_path


def test_the_command_line_is_told_the_option(workdir: Path) -> None:
    missing = workdir / "nope" / "petsync.prom"
    result = CliRunner().invoke(cli, ["export", "--out", "out", "--metrics-file", str(missing)])
    assert result.exit_code == 2, result.output
    assert "create it or point --metrics-file at node_exporter's" in result.stderr


def test_a_job_file_is_told_its_key_and_the_file(workdir: Path) -> None:
    missing = workdir / "nope" / "petsync.prom"
    job = workdir / "nightly.toml"
    job.write_text(f'[export]\nout = "out"\nmetrics_file = "{missing}"\n', encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", str(job)])
    assert result.exit_code == 2, result.output
    assert f"create it or point metrics_file in {job} at node_exporter's" in result.stderr
    assert "--metrics-file" not in result.stderr


def test_a_job_files_error_event_names_its_key_too(workdir: Path) -> None:
    missing = workdir / "nope" / "petsync.prom"
    job = workdir / "nightly.toml"
    job.write_text(f'[export]\nout = "out"\nmetrics_file = "{missing}"\n', encoding="utf-8")
    result = CliRunner().invoke(cli, ["--log-format", "json", "run", str(job)])
    events = [json.loads(line) for line in result.stderr.splitlines()]
    assert [e["event"] for e in events] == ["error"]
    assert f"point metrics_file in {job} at" in events[0]["fields"]["message"]


def test_the_library_is_told_the_keyword(workdir: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        check_metrics_path(workdir / "nope" / "petsync.prom")
    assert "create it or point path= at node_exporter's" in str(caught.value)
    assert "point --metrics-file at" in caught.value.render(COMMAND_LINE)


def test_a_warning_names_the_setting_in_its_handlers_terms() -> None:
    stream = io.StringIO()
    handle = configure_logging("text", stream=stream, terms=COMMAND_LINE)
    fields = {"fields": {"row": 3, "http_status": 502}}
    try:
        logging.getLogger("petsync.test").warning("import_row_uncertain", extra=fields)
        with handle.terms_of(job_file_terms(Path("jobs/bulk.toml"))):
            logging.getLogger("petsync.test").warning("import_row_uncertain", extra=fields)
    finally:
        handle.close()
    first, second = stream.getvalue().splitlines()
    assert first.endswith("list the pets, then --settle")
    assert second.endswith("list the pets, then settle = true in jobs/bulk.toml")


def test_a_message_inside_a_logged_report_names_the_option(workdir: Path) -> None:
    sheet = workdir / "pets.csv"
    sheet.write_text("name,categoryId,Pet state\nRex,1,available\n", encoding="utf-8")
    args = ["--log-format", "json", "--log-level", "info", "import", str(sheet), "--dry-run"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    (finished,) = [e for e in events if e["event"] == "import_finished"]
    assert finished["fields"]["map_hints"] == ['--map "Pet state=status"']
