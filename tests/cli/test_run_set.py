"""`petsync run --set KEY=VALUE`: one job key replaced for one run, checked like the file's."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from petsync.server.runner import RunningServer
from tests.cli.test_run import install_jobs, invoke, workdir  # noqa: F401 (a fixture)


def test_set_replaces_the_file_key_for_this_run_only(
    workdir: Path,  # noqa: F811
    petstore_server: Callable[..., RunningServer],
) -> None:
    srv = petstore_server()
    install_jobs(workdir, srv)
    (workdir / "late.csv").write_text("name,categoryId\nLate,9\n", encoding="utf-8")
    env = {"PETSYNC_PRODUCTION_API_KEY": srv.api_key.reveal()}
    result = invoke(["run", "jobs/bulk-import.toml", "--set", "file=late.csv"], env)
    assert result.exit_code == 0, result.output
    assert [pet.name for pet in srv.store.all()] == ["Late"]  # the inbox was not read
    assert (workdir / "inbox" / "new-animals.csv").is_file()
    again = invoke(["run", "--check", "jobs/bulk-import.toml"], env)
    assert 'file = ["inbox/*"]' in again.output  # the file itself is unchanged


def test_set_values_are_toml_and_show_in_check(
    workdir: Path,  # noqa: F811
    petstore_server: Callable[..., RunningServer],
) -> None:
    srv = petstore_server()
    install_jobs(workdir, srv)
    env = {"PETSYNC_PRODUCTION_API_KEY": srv.api_key.reveal()}
    result = invoke(
        ["run", "--check", "jobs/nightly-export.toml", "--set", "keep=7", "--set", "sweep=false"],
        env,
    )
    assert result.exit_code == 0, result.output
    assert "  keep = 7" in result.output
    assert "  sweep = false" in result.output


def test_set_of_a_wrong_type_names_the_option_and_exits_2(
    workdir: Path,  # noqa: F811
    petstore_server: Callable[..., RunningServer],
) -> None:
    srv = petstore_server()
    install_jobs(workdir, srv)
    result = invoke(["run", "--check", "jobs/nightly-export.toml", "--set", "keep=soon"])
    assert result.exit_code == 2
    assert '--set keep: keep must be an integer, got "soon" (string)' in result.output


def test_set_of_an_unknown_key_or_without_equals_exits_2(
    workdir: Path,  # noqa: F811
    petstore_server: Callable[..., RunningServer],
) -> None:
    srv = petstore_server()
    install_jobs(workdir, srv)
    unknown = invoke(["run", "--check", "jobs/nightly-export.toml", "--set", "kept=3"])
    assert unknown.exit_code == 2
    assert "--set kept: unknown key 'kept'" in unknown.output
    bare = invoke(["run", "--check", "jobs/nightly-export.toml", "--set", "keep"])
    assert bare.exit_code == 2
    assert "--set 'keep': write KEY=VALUE" in bare.output


def test_set_never_takes_a_key_value(
    workdir: Path,  # noqa: F811
    petstore_server: Callable[..., RunningServer],
) -> None:
    srv = petstore_server()
    install_jobs(workdir, srv)
    result = invoke(["run", "--check", "jobs/nightly-export.toml", "--set", "api_key=hunter2"])
    assert result.exit_code == 2
    assert "hunter2" not in result.output
    assert json.dumps("hunter2") not in result.output
