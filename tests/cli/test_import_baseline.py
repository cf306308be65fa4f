"""``--baseline`` (job key ``baseline``): off by default, opt-in on the command line and in a
job file; ``--no-baseline`` is still accepted (it is the default)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.server.runner import RunningServer
from tests.conftest import StartServer
from tests.importer.doubles import journal_of


def env_of(srv: RunningServer) -> dict[str, str]:
    return {"PETSYNC_API_KEY": srv.api_key.reveal(), "PETSYNC_BASE_URL": srv.base_url}


def baseline_lines(source: Path) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in journal_of(source).read_text().splitlines()]
    return [line["baseline"] for line in lines if "baseline" in line]


@pytest.mark.parametrize(
    ("options", "listed"),
    [([], False), (["--no-baseline"], False), (["--baseline"], True)],
    ids=["default", "no-baseline", "baseline"],
)
def test_the_catalogue_is_listed_before_the_first_post_only_when_asked(
    isolated: Path, petstore_server: StartServer, options: list[str], listed: bool
) -> None:
    srv = petstore_server(seed_pets=30)
    source = isolated / "pets.csv"
    source.write_text("name,categoryId\nRex,1\n")
    result = CliRunner().invoke(cli, ["import", str(source), *options], env=env_of(srv))
    assert result.exit_code == 0, result.output
    assert bool(baseline_lines(source)) is listed
    assert srv.store.count() == 31


def test_a_job_file_asks_for_the_baseline_with_one_key(
    isolated: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    source = isolated / "pets.csv"
    source.write_text("name,categoryId\nRex,1\n")
    job = isolated / "import.toml"
    job.write_text('[import]\nfile = "pets.csv"\nbaseline = true\n', encoding="utf-8")
    result = CliRunner().invoke(cli, ["run", str(job)], env=env_of(srv))
    assert result.exit_code == 0, result.output
    (baseline,) = baseline_lines(source)
    assert baseline["complete"] is True

    job.write_text('[import]\nfile = "pets.csv"\nbaseline = "yes"\n', encoding="utf-8")
    refused = CliRunner().invoke(cli, ["run", "--check", str(job)], env=env_of(srv))
    assert refused.exit_code == 2
    assert "baseline" in refused.output and "true or false" in refused.output
