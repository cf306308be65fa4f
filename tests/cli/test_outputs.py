"""Where results go: --json documents on stdout, --report (a file, '-', a device) and
--metrics-file, each output location checked before the first request."""

from __future__ import annotations

import errno
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import respx
from click.testing import CliRunner, Result

from petsync.cli import cli
from tests.conftest import route_clients_to

KEY = "sk-OUTPUTS-CANARY-4242"
BASE = "https://petstore.test/v1"


def invoke(args: list[str], srv: Any = None, **env: str) -> Result:
    environ = {"PETSYNC_API_KEY": KEY, "PETSYNC_BASE_URL": BASE}
    if srv is not None:
        environ = {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}
    result = CliRunner().invoke(cli, args, env={**environ, **env})
    assert KEY not in result.stdout + result.stderr
    return result


def one_document(stdout: str) -> dict[str, Any]:
    """stdout holds exactly one line, a JSON object."""
    (line,) = stdout.splitlines()
    document = json.loads(line)
    assert isinstance(document, dict)
    return document


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[respx.MockRouter]:
    """No request may leave: every route answers, and the tests assert none was called."""
    with respx.mock(assert_all_called=False) as router:
        route_clients_to(router, monkeypatch)
        router.route().respond(500)
        yield router


def read_only(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """Creating a file in ``directory`` fails as on a read-only file system (EROFS)."""
    real = tempfile.mkstemp

    def mkstemp(*args: object, dir: str | Path | None = None, **kwargs: object) -> object:
        if dir is not None and Path(dir).resolve() == directory.resolve():
            raise OSError(errno.EROFS, "Read-only file system")
        return real(*args, dir=dir, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)


# -- --json --


def test_export_json_with_json_logs_is_json_lines_throughout(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server(seed_pets=30)

    result = invoke(
        ["--log-format", "json", "--log-level", "info", "export", "--out", "out", "--json"], srv
    )

    assert result.exit_code == 0, result.output
    document = one_document(result.stdout)
    assert (document["pets"], document["complete"], document["exit_code"]) == (30, True, 0)
    assert document["snapshot_path"] == str(next(Path("out/pets").iterdir()))
    assert document["warnings"] == [] and document["pruned"] == []
    events = [json.loads(line)["event"] for line in result.stderr.splitlines()]
    assert "export.published" in events
    assert srv.api_key.reveal() not in result.output


def test_import_json_prints_the_report_instead_of_the_summary(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\n,2\n")

    result = invoke(["import", "pets.csv", "--json"], srv)

    assert result.exit_code == 4
    document = one_document(result.stdout)
    assert (document["created"], document["rejected_local"], document["exit_code"]) == (1, 1, 4)
    assert result.stderr == ""


def test_report_dash_is_stdout_not_a_file_named_dash(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\n")

    result = invoke(["import", "pets.csv", "--report", "-"], srv)

    assert result.exit_code == 0, result.output
    assert one_document(result.stdout)["created"] == 1
    assert not Path("-").exists()


def test_check_json(petstore_server: Any, isolated: Path) -> None:
    srv = petstore_server(seed_pets=3)

    result = invoke(["check", "--json"], srv)

    assert result.exit_code == 0, result.output
    document = one_document(result.stdout)
    assert document["base_url"] == srv.base_url
    assert (document["key_accepted"], document["pagination_style"]) == (True, "link")


def test_config_show_json_names_each_source_and_never_the_key(isolated: Path) -> None:
    result = invoke(["config", "show", "--json"])

    assert result.exit_code == 0, result.output
    document = one_document(result.stdout)
    assert document["environment"] == {"value": "production", "source": "default"}
    assert document["base_url"] == {"value": BASE, "source": "PETSYNC_BASE_URL"}
    assert document["api_key"] == {"value": "***", "source": "PETSYNC_API_KEY"}
    assert document["config_file"] == {"value": None, "source": "no petsync.toml found"}


# -- output locations checked before the first request --


def test_report_on_a_read_only_file_system_fails_before_anything_is_sent(
    api: respx.MockRouter, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("pets.csv").write_text("name,categoryId\nRex,1\n")
    Path("ro").mkdir()
    read_only(monkeypatch, Path("ro"))

    result = invoke(["import", "pets.csv", "--report", "ro/report.json"])

    assert result.exit_code == 2
    assert result.stderr == (
        "Error: report file (--report) ro/report.json: cannot create files in ro (Read-only "
        "file system); choose a location petsync can write to, or fix its permissions\n"
    )
    assert not api.calls
    assert result.stdout == ""


def test_metrics_file_on_a_read_only_file_system_fails_before_the_export(
    api: respx.MockRouter, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("metrics").mkdir()
    read_only(monkeypatch, Path("metrics"))

    result = invoke(["export", "--out", "out", "--metrics-file", "metrics/export.prom"])

    assert result.exit_code == 2
    assert result.stderr == (
        "Error: metrics file metrics/export.prom: cannot create files in metrics (Read-only "
        "file system); choose a location petsync can write to, or fix its permissions\n"
    )
    assert result.stdout == ""  # no success summary first
    assert not api.calls
    assert not Path("out").exists()


def test_a_link_at_the_report_name_is_refused_before_anything_is_sent(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("pets.csv").write_text("name,categoryId\nRex,1\n")
    Path("report.json").symlink_to("/dev/null")

    result = invoke(["import", "pets.csv", "--report", "report.json"], srv)

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        "Error: report file (--report) report.json is a symbolic link to /dev/null and "
        "petsync never writes through a link"
    )
    assert srv.store.all() == []
    assert Path("report.json").is_symlink()
