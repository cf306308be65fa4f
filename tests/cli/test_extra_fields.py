"""``--extra-fields`` on the command line, in job files and in petsync.toml; the server's and
the demo's ``--extra-fields-demo``; ``petsync diff`` on extra fields. Through CliRunner."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.cli.serve import ready_lines
from petsync.client.config import ClientConfig
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.formats.snapshots import list_snapshots, load_snapshot
from petsync.server.faults import Faults
from petsync.server.runner import RunningServer
from petsync.storage.layout import MANIFEST_NAME, partition_path

TODAY = dt.datetime.now(dt.UTC).date()
PETS = 60


@pytest.fixture
def srv(petstore_server: Callable[..., RunningServer]) -> RunningServer:
    return petstore_server(seed_pets=PETS, faults=Faults(extra_fields=True))


def run(srv: RunningServer, *args: str, base_url: bool = True) -> Result:
    env = {"PETSYNC_API_KEY": srv.api_key.reveal()}
    if base_url:
        env["PETSYNC_BASE_URL"] = srv.base_url
    return CliRunner().invoke(cli, list(args), env=env)


def mode(out: Path) -> str:
    manifest = json.loads((partition_path(out, TODAY) / MANIFEST_NAME).read_text())
    result: str = manifest["extra_fields"]["mode"]
    return result


def test_by_default_extra_fields_are_dropped_and_the_output_says_so(
    srv: RunningServer, isolated: Path
) -> None:
    result = run(srv, "export", "--out", "out")

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[3] == (
        "extra fields: birthDate, owner, tag, vaccinated, weightKg: dropped (--extra-fields drop)"
    )
    assert lines[4].startswith("warning: The API's pets changed shape: new fields birthDate ")
    assert lines[4].endswith(
        "They were dropped (--extra-fields drop, the default); pass --extra-fields keep to keep "
        "them as columns, or --extra-fields fail to refuse such a night."
    )
    assert list(load_snapshot("out").columns) == ["id", "name", "categoryId", "status"]


def test_keep_writes_the_columns(srv: RunningServer, isolated: Path) -> None:
    result = run(srv, "export", "--out", "out", "--extra-fields", "keep")

    assert result.exit_code == 0, result.output
    assert "kept as columns" in result.stdout
    assert list(load_snapshot("out").columns)[4:] == [
        "birthDate",
        "owner",
        "tag",
        "vaccinated",
        "weightKg",
    ]


def test_fail_exits_1_naming_the_fields_and_publishes_nothing(
    srv: RunningServer, isolated: Path
) -> None:
    result = run(srv, "export", "--out", "out", "--extra-fields", "fail")

    assert result.exit_code == 1
    error = result.stderr.splitlines()[-1]
    assert error.startswith(
        "Error: export refused to publish (--extra-fields fail): the API sent fields beyond "
        "the interface's: birthDate (string, on 30 pets), owner (object, on 8 pets), "
    )
    assert list_snapshots("out") == []


def test_an_unknown_choice_is_a_usage_error(srv: RunningServer, isolated: Path) -> None:
    result = run(srv, "export", "--out", "out", "--extra-fields", "merge")

    assert result.exit_code == 2
    assert "'merge' is not one of 'drop', 'keep', 'fail'" in result.stderr


def test_the_environment_setting_applies_and_the_option_wins(
    srv: RunningServer, isolated: Path
) -> None:
    (isolated / "petsync.toml").write_text(
        f'[environments.production]\nbase_url = "{srv.base_url}"\nextra_fields = "keep"\n'
    )

    assert run(srv, "export", "--out", "a", base_url=False).exit_code == 0
    assert run(srv, "export", "--out", "b", "--extra-fields", "drop", base_url=False).exit_code == 0

    assert (mode(Path("a")), mode(Path("b"))) == ("keep", "drop")


def test_a_bad_environment_setting_names_the_file_and_key(
    srv: RunningServer, isolated: Path
) -> None:
    config = isolated / "petsync.toml"
    config.write_text(
        f'[environments.production]\nbase_url = "{srv.base_url}"\nextra_fields = "kep"\n'
    )

    result = run(srv, "export", "--out", "out", base_url=False)

    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {config} [environments.production] extra_fields: 'kep' is no --extra-fields "
        "choice; use one of: drop, keep, fail\n"
    )


def test_a_job_file_takes_the_extra_fields_key(srv: RunningServer, isolated: Path) -> None:
    (isolated / "nightly.toml").write_text('[export]\nout = "out"\nextra_fields = "keep"\n')

    result = run(srv, "run", "nightly.toml")

    assert result.exit_code == 0, result.output
    assert mode(Path("out")) == "keep"
    (isolated / "bad.toml").write_text('[export]\nout = "out"\nextra_fields = "sometimes"\n')
    bad = run(srv, "run", "--check", "bad.toml")
    assert bad.exit_code == 2
    assert "extra_fields must be one of: drop, keep, fail" in bad.stderr


def test_diff_lists_the_fields_that_appeared(
    petstore_server: Callable[..., RunningServer], isolated: Path
) -> None:

    faults = Faults()
    server = petstore_server(seed_pets=PETS, faults=faults)
    config = ExportConfig(ClientConfig(server.base_url, server.api_key), Path("out"))
    run_export(config, today=dt.date(2026, 11, 21))
    faults.extra_fields = True
    run_export(config, today=dt.date(2026, 11, 22))

    result = CliRunner().invoke(cli, ["diff", "2026-11-21", "2026-11-22", "--dir", "out"])

    assert result.exit_code == 0, result.output
    assert "fields appeared:    birthDate, owner, tag, vaccinated, weightKg" in result.stdout
    assert "fields disappeared: -" in result.stdout


def test_serve_says_it_sends_extra_fields(srv: RunningServer) -> None:
    assert (
        "Extra fields beyond the interface's: tag, birthDate, weightKg, vaccinated, owner"
        in ready_lines(srv)
    )


def test_the_demo_can_show_extra_fields_kept(isolated: Path) -> None:
    result = CliRunner().invoke(
        cli, ["demo", "--pets", "50", "--out", "demo", "--extra-fields-demo"]
    )

    assert result.exit_code == 0, result.output
    assert "extra fields: birthDate, owner, tag, vaccinated, weightKg: kept as columns" in (
        result.stdout
    )
    assert "weightKg" in load_snapshot("demo").columns
