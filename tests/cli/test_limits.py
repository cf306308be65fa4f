"""--timeout, --retries, --retry-budget and --max-response-size: on every command that talks
to the API, in petsync.toml environments and job files, shown by config show, obeyed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.server.faults import Faults

LOOPBACK = "http://127.0.0.1:9/v1"
API_COMMANDS = ["check", "get", "export", "import", "config show", "run"]
LIMIT_OPTIONS = ["--timeout", "--retries", "--retry-budget", "--max-response-size"]


def invoke(args: list[str], **env: str) -> Result:
    return CliRunner().invoke(cli, args, env={"PETSYNC_API_KEY": "k", **env})


def limit_lines(stdout: str) -> list[str]:
    """The limit rows of config show (run --check indents them, then lists the file's keys)."""
    row = re.compile(r"(timeout|retries|retry budget|max response) +\S.*  \[.+\]$")
    return [line.strip() for line in stdout.splitlines() if row.match(line.strip())]


@pytest.mark.parametrize("command", API_COMMANDS)
def test_every_command_that_talks_to_the_api_takes_the_limits(command: str) -> None:
    result = invoke([*command.split(), "--help"])

    assert result.exit_code == 0
    for option in LIMIT_OPTIONS:
        assert f"  {option} " in result.stdout, f"{command} lacks {option}"


def test_config_show_names_each_limits_value_and_source(isolated: Path) -> None:
    Path("petsync.toml").write_text(
        f'[environments.production]\nbase_url = "{LOOPBACK}"\nretries = 2\n'
        'max_response_size = "1MiB"\n'
    )

    result = invoke(["config", "show", "--timeout", "7.5"])

    assert result.exit_code == 0, result.output
    where = f"{isolated / 'petsync.toml'} [environments.production]"
    assert limit_lines(result.stdout) == [
        "timeout       7.5 s a request  [--timeout]",
        f"retries       2  [{where} retries]",
        "retry budget  300 s  [default]",
        f"max response  1 MiB  [{where} max_response_size]",
    ]


def test_run_check_names_the_job_file_as_the_source(isolated: Path) -> None:
    Path("job.toml").write_text(
        '[export]\nout = "s"\ntimeout = 20\nmax_response_size = "64MiB"\n', encoding="utf-8"
    )

    result = invoke(
        ["run", "--check", "--max-response-size", "2MiB", "job.toml"], PETSYNC_BASE_URL=LOOPBACK
    )

    assert result.exit_code == 0, result.output
    assert limit_lines(result.stdout) == [
        "timeout       20 s a request  [job file job.toml]",
        "retries       5  [default]",
        "retry budget  300 s  [default]",
        "max response  2 MiB  [--max-response-size]",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--timeout", "0"], "Invalid value for '--timeout': 0.0 is not in the range x>0."),
        (["--retries", "-1"], "Invalid value for '--retries': -1 is not in the range x>=0."),
        (
            ["--max-response-size", "12XB"],
            "Invalid value for '--max-response-size': '12XB' is not a size; use e.g. 32MiB, "
            "500kB or 1048576",
        ),
    ],
    ids=["timeout-zero", "retries-negative", "size-unit"],
)
def test_a_bad_limit_exits_2(args: list[str], message: str) -> None:
    result = invoke(["check", *args], PETSYNC_BASE_URL=LOOPBACK)

    assert result.exit_code == 2
    assert result.stderr.endswith(f"Error: {message}\n")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            'max_response_size = "huge"',
            "job file job.toml [export]: max_response_size: 'huge' is not a size; use e.g. "
            "32MiB, 500kB or 1048576",
        ),
        ("retries = -1", "job file job.toml [export]: retries: -1 is not in the range x>=0."),
        (
            'timeout = "slow"',
            'job file job.toml [export]: timeout must be a number, got "slow" (string)',
        ),
    ],
    ids=["size", "retries", "timeout"],
)
def test_a_bad_limit_in_a_job_file_names_the_file_and_key(
    isolated: Path, line: str, message: str
) -> None:
    Path("job.toml").write_text(f'[export]\nout = "s"\n{line}\n', encoding="utf-8")

    result = invoke(["run", "job.toml"], PETSYNC_BASE_URL=LOOPBACK)

    assert result.exit_code == 2
    assert result.stderr == f"Error: {message}\n"


def test_a_page_over_the_size_limit_fails_the_export(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server(seed_pets=200)
    env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}

    result = CliRunner().invoke(
        cli, ["export", "--out", "out", "--max-response-size", "1KiB"], env=env
    )

    assert result.exit_code == 1
    assert "more than the response size limit of 1 KiB" in result.stderr
    assert "raise the limit with --max-response-size" in result.stderr


def test_retries_0_gives_up_after_one_attempt(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server(faults=Faults(fail_rate=1.0))
    env = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}

    result = CliRunner().invoke(cli, ["check", "--retries", "0"], env=env)

    assert result.exit_code == 1
    assert "raise --retries (now 0 retries)" in result.stderr
