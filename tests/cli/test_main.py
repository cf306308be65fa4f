"""The ``petsync`` group: its help, and the one boundary every error leaves through."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from petsync._version import __version__
from petsync.cli import cli
from petsync.cli.state import bug_report_request
from petsync.core.errors import ExitCode


def test_group_help_lists_every_exit_code() -> None:
    result = CliRunner().invoke(cli, ["--help"])

    epilog = " ".join(result.stdout.split("Exit codes:")[1].split())
    listed = [int(code) for code in re.findall(r"(?:^|, )(\d+) ", epilog)]
    assert listed == sorted(int(code) for code in ExitCode)
    assert "75 skipped: another run holds the lock" in epilog


KEY = "sk-BUG-CANARY-31337"


def broken_config_show(monkeypatch: pytest.MonkeyPatch) -> None:
    """`config show` meets a bug: an exception petsync never meant to raise."""

    def target_lines(target: object) -> list[str]:
        raise RuntimeError(f"boom\nwith the key {KEY} in it")

    monkeypatch.setattr("petsync.cli.config.target_lines", target_lines)


def invoke(*args: str) -> Result:
    env = {"PETSYNC_BASE_URL": "http://127.0.0.1:9/v1", "PETSYNC_API_KEY": KEY}
    result = CliRunner().invoke(cli, list(args), env=env)
    assert KEY not in result.stdout + result.stderr
    return result


BUG_LINE = (
    "Error: internal error, a bug in petsync {version}: RuntimeError: boom with the key *** in "
    "it. {request}"
)


def test_a_bug_is_one_line_saying_so_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    broken_config_show(monkeypatch)

    result = invoke("config", "show")

    assert result.exit_code == 1
    expected = BUG_LINE.format(version=__version__, request=bug_report_request())
    assert result.stderr == f"{expected}; --log-level debug shows the traceback\n"


def test_a_bug_shows_its_traceback_at_debug(
    monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    broken_config_show(monkeypatch)

    result = invoke("--log-level", "debug", "config", "show")

    assert result.exit_code == 1
    first, *rest = result.stderr.splitlines()
    assert first == BUG_LINE.format(version=__version__, request=bug_report_request())
    assert rest[0] == "Traceback (most recent call last):"
    assert rest[-2:] == ["RuntimeError: boom", "with the key *** in it"]


@pytest.mark.parametrize(
    ("place", "request_text"),
    [
        (None, "Please report it with the command you ran"),
        ("https://t.example/i", "Please report it at https://t.example/i with the command you ran"),
    ],
    ids=["no-tracker-named", "tracker-in-metadata"],
)
def test_a_bug_report_request_names_only_a_tracker_the_metadata_names(
    monkeypatch: pytest.MonkeyPatch, place: str | None, request_text: str
) -> None:
    monkeypatch.setattr("petsync.cli.state.bug_report_place", lambda: place)

    assert bug_report_request() == request_text


@pytest.mark.parametrize("level", ["warning", "debug"])
def test_a_bug_in_json_mode_is_one_json_error_event(
    monkeypatch: pytest.MonkeyPatch, isolated: Path, level: str
) -> None:
    broken_config_show(monkeypatch)

    result = invoke("--log-format", "json", "--log-level", level, "config", "show")

    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    entry = json.loads(line)
    assert (entry["level"], entry["event"]) == ("error", "error")
    fields = entry["fields"]
    assert (fields["error"], fields["exit_code"], fields["bug"]) == ("RuntimeError", 1, True)
    assert fields["message"].startswith("internal error, a bug in petsync ")
    assert ("traceback" in fields) is (level == "debug")


def test_a_usage_error_in_json_mode_is_a_json_error_event(isolated: Path) -> None:
    result = invoke("--log-format", "json", "export")

    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    fields = json.loads(line)["fields"]
    assert fields == {
        "message": "Missing option '--out'.",
        "error": "MissingParameter",
        "exit_code": 2,
    }


def test_a_usage_error_in_text_mode_is_clicks_usage_text(isolated: Path) -> None:
    result = invoke("export")

    assert result.exit_code == 2
    assert result.stderr.startswith("Usage: ")
    assert result.stderr.endswith("Error: Missing option '--out'.\n")
