"""``petsync serve`` through click's CliRunner: option errors and their exit codes."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.cli.serve import ready_lines
from petsync.server.faults import Faults
from petsync.server.runner import RunningServer

KEY = "cli-serve-test-key"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "key"
    path.write_text(KEY + "\n")
    path.chmod(0o600)
    return path


@pytest.fixture
def busy_port() -> Iterator[int]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield int(sock.getsockname()[1])
    sock.close()


ENV = {"PETSYNC_API_KEY": KEY}

OPTION_ERRORS = [
    ("pagination", ["--pagination", "links"], "Invalid value for '--pagination'"),
    ("fail-rate", ["--fail-rate", "1.5"], "Invalid value for '--fail-rate'"),
    ("rate-limit", ["--rate-limit", "0"], "Invalid value for '--rate-limit'"),
    ("latency", ["--latency-ms", "-1"], "Invalid value for '--latency-ms'"),
    ("port", ["--port", "70000"], "Invalid value for '--port'"),
    ("seed", ["--seed-pets", "-3"], "Invalid value for '--seed-pets'"),
    ("page-cap", ["--page-cap", "0"], "Invalid value for '--page-cap'"),
    # A key value never comes from the command line (it would show in ps and history).
    ("api-key-value", ["--api-key", KEY], "No such option '--api-key'"),
]


@pytest.mark.parametrize(
    ("args", "message"), [c[1:] for c in OPTION_ERRORS], ids=[c[0] for c in OPTION_ERRORS]
)
def test_serve_option_errors_exit_2(runner: CliRunner, args: list[str], message: str) -> None:
    result = runner.invoke(cli, ["serve", *args], env=ENV)
    assert result.exit_code == 2
    assert message in result.output
    assert "Serving Petstore" not in result.output


def test_group_readable_key_file_is_refused_with_the_fix(runner: CliRunner, key_file: Path) -> None:
    key_file.chmod(0o640)
    result = runner.invoke(cli, ["serve", "--api-key-file", str(key_file)], env={})
    assert result.exit_code == 2
    assert result.output == (
        f"Error: API key file {key_file} is readable by group or others (mode 640); "
        f"fix it with: chmod 600 {key_file}\n"
    )


def test_missing_key_file_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    result = runner.invoke(cli, ["serve", "--api-key-file", str(missing)], env={})
    assert result.exit_code == 2
    assert result.output == (
        f"Error: cannot read API key file {missing}: No such file or directory\n"
    )


def test_db_in_a_missing_directory_is_a_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    db = tmp_path / "no-such-dir" / "pets.db"
    result = runner.invoke(cli, ["serve", "--db", str(db)], env=ENV)
    assert result.exit_code == 2
    assert result.output == (
        f"Error: cannot open database {db}: unable to open database file; pass --db with a "
        "path in an existing directory, to a petsync database or a new file\n"
    )


def test_a_port_in_use_fails_with_exit_1_and_the_fix(runner: CliRunner, busy_port: int) -> None:
    result = runner.invoke(cli, ["serve", "--port", str(busy_port)], env=ENV)
    assert result.exit_code == 1
    assert result.output == (
        f"Error: cannot listen on 127.0.0.1:{busy_port}: Address already in use; "
        "pick another --port (0 picks a free one) or --host\n"
    )
    assert KEY not in result.output


def test_serve_help_documents_the_key_sources_and_an_example(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["serve", "--help"])
    assert result.exit_code == 0
    assert "PETSYNC_API_KEY" in result.output
    assert "--api-key-file" in result.output
    assert "petsync serve --port 8080 --db pets.db --seed-pets 1000" in result.output
    for option in ("--fail-rate", "--rate-limit", "--latency-ms", "--pagination", "--page-cap"):
        assert option in result.output


def test_the_command_line_loads_the_server_only_when_serving() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, petsync.cli.main; print(sorted({'starlette', 'uvicorn'} & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout == "[]\n"


def test_ready_lines_name_the_catalogue_the_faults_and_the_url(
    petstore_server: Callable[..., RunningServer],
) -> None:
    srv = petstore_server(
        seed_pets=5, pagination="offset", page_cap=2, faults=Faults(latency_ms=1.5, seed=7)
    )
    assert ready_lines(srv) == [
        "Seeded 5 demo pets into memory",
        "Catalogue: 5 pets in memory; pagination: offset",
        "Injected faults: latency-ms 1.5, page-cap 2 (seed 7)",
        f"Serving Petstore at {srv.base_url}",
        "Stop with Ctrl-C or SIGTERM.",
    ]


def test_ready_lines_say_why_a_kept_database_is_not_seeded(
    petstore_server: Callable[..., RunningServer], tmp_path: Path
) -> None:
    db = tmp_path / "pets.db"
    petstore_server(db_path=db, seed_pets=3).stop()
    srv = petstore_server(db_path=db, seed_pets=3)
    assert ready_lines(srv)[:2] == [
        f"Not seeding: {db} holds or once held pets",
        f"Catalogue: 3 pets in {db}; pagination: link",
    ]


@pytest.mark.parametrize(
    ("host", "warned"),
    [("127.0.0.1", False), ("::1", False), ("localhost", False), ("0.0.0.0", True)],
    ids=["ipv4-loopback", "ipv6-loopback", "localhost", "every-interface"],
)
def test_a_host_other_than_loopback_is_warned_about(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch, host: str, warned: bool
) -> None:
    # Tests listen on loopback only: the server itself is not started here.
    served: list[str] = []
    monkeypatch.setattr(
        "petsync.server.runner.serve_forever",
        lambda config, *, host, port, on_ready: served.append(host),
    )

    result = runner.invoke(cli, ["serve", "--host", host], env=ENV)

    assert result.exit_code == 0, result.output
    assert served == [host]
    if warned:
        assert result.stderr == (
            "Warning: listening on every interface of this host (--host 0.0.0.0), not "
            "loopback: clients send the API key over plain HTTP, readable by anyone on the "
            "network between them and this server. The reference server is for tests; keep it "
            "on 127.0.0.1, or put an HTTPS proxy in front of it.\n"
        )
    else:
        assert result.stderr == ""
