"""`petsync config show` always answers: every setting or "not set", where it came from, and
what a command would still need; `--check` exits 2 for scripts when something is missing."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from petsync.cli import cli

BASE = "https://petstore.example.com/v1"


def _show(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, ["config", "show", *args], env=env or {})


def test_a_bare_environment_shows_every_setting_and_what_is_missing(isolated: Path) -> None:
    result = _show()
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "environment   production  [default]"
    assert lines[1] == "config file   none  [no petsync.toml found]"
    assert lines[2] == (
        "base URL      not set  [looked at --base-url, PETSYNC_BASE_URL, base_url of "
        "[environments.production]]"
    )
    assert lines[3].startswith("API key       not set: set PETSYNC_PRODUCTION_API_KEY or ")
    assert lines[8] == "max response  32 MiB  [default]"
    assert lines[9] == "a command would still need:"
    assert lines[10].startswith("  - no base URL: pass --base-url or set PETSYNC_BASE_URL")
    assert lines[11].startswith(
        "  - no API key: set PETSYNC_PRODUCTION_API_KEY (environment 'production') or "
        "PETSYNC_API_KEY, or pass --api-key-file"
    )
    assert len(lines) == 12
    assert result.stderr == ""


def test_check_exits_2_after_showing_everything(isolated: Path) -> None:
    result = _show("--check")
    assert result.exit_code == 2
    assert "base URL      not set" in result.stdout
    assert result.stderr.startswith("Error: not ready: no base URL: pass --base-url")


def test_json_gives_null_for_what_is_not_set_and_the_needs(isolated: Path) -> None:
    result = _show("--json", env={"PETSYNC_BASE_URL": BASE})
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["base_url"] == {"value": BASE, "source": "PETSYNC_BASE_URL"}
    assert document["api_key"] == {"value": None, "source": "nowhere"}
    assert [need.split(":")[0] for need in document["needs"]] == ["no API key"]


def test_everything_set_is_ready_and_check_passes(isolated: Path) -> None:
    env = {"PETSYNC_BASE_URL": BASE, "PETSYNC_PRODUCTION_API_KEY": "sk-ready-canary"}
    result = _show("--check", env=env)
    assert result.exit_code == 0, result.output
    assert "API key       *** (hidden)  [PETSYNC_PRODUCTION_API_KEY]" in result.stdout
    assert result.stdout.splitlines()[-1] == "ready: a command has the base URL and key it needs"
    assert "sk-ready-canary" not in result.output
    assert json.loads(_show("--json", env=env).stdout)["needs"] == []


def test_an_unreadable_config_file_is_named_and_the_rest_still_shown(isolated: Path) -> None:
    Path("petsync.toml").write_text("[environments.production\n")
    result = _show(env={"PETSYNC_BASE_URL": BASE, "PETSYNC_API_KEY": "k-1"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[1] == "config file   none  [not read: see what a command would still need]"
    assert lines[2] == f"base URL      {BASE}  [PETSYNC_BASE_URL]"
    assert any(
        line.startswith(f"  - config file {isolated / 'petsync.toml'} is not valid TOML")
        for line in lines
    )


def test_an_environment_not_in_the_config_file_is_named_with_the_fix(isolated: Path) -> None:
    Path("petsync.toml").write_text(f'[environments.production]\nbase_url = "{BASE}"\n')
    result = _show("--env", "staging")
    assert result.exit_code == 0, result.output
    assert "environment   staging  [--env]" in result.stdout
    assert (
        "  - environment 'staging' (from --env) is not defined in config file "
        f"{isolated / 'petsync.toml'} (defined: production)"
    ) in result.stdout
