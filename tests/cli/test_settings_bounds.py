"""Settings that cannot work are usage errors at once (exit 2), naming the setting or the
file: a base URL whose port does not exist, a job or config file nested thousands deep."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.core.interface import SETTINGS_FILE_LIMIT

ENV = {"PETSYNC_API_KEY": "k"}


def run(*args: str, **env: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={**ENV, **env}, catch_exceptions=False)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:99999/v1", "names port 99999; a port is a number from 1 to 65535"),
        ("http://127.0.0.1:0/v1", "names port 0; a port is a number from 1 to 65535"),
        ("http://exa mple.com/v1", "has the host 'exa%20mple.com', which no DNS name"),
    ],
    ids=["port-too-big", "port-zero", "space-in-host"],
)
def test_an_unusable_base_url_is_exit_2_at_once_naming_the_setting(
    isolated: Path, url: str, said: str
) -> None:
    result = run("export", "--out", "out", "--base-url", url, "--allow-insecure-http")
    assert result.exit_code == 2, result.output
    assert said in result.stderr
    assert "(base URL from --base-url)" in result.stderr
    assert not Path("out").exists()  # nothing tried, nothing written
    from_env = run("import", "pets.csv", PETSYNC_BASE_URL=url)
    assert from_env.exit_code == 2
    assert "(base URL from PETSYNC_BASE_URL)" in from_env.stderr


def test_a_job_file_nested_thousands_deep_is_exit_2_naming_the_file(isolated: Path) -> None:
    Path("job.toml").write_text("[export]\nout = " + "[" * 5000 + "]" * 5000 + "\n")
    for args in (["run", "--check", "job.toml"], ["run", "job.toml"]):
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert "job file job.toml nests arrays or tables too deeply to read" in result.stderr
        assert "internal error" not in result.output


def test_a_job_file_over_the_size_limit_or_not_utf8_is_exit_2(isolated: Path) -> None:
    Path("big.toml").write_text("# " + "x" * SETTINGS_FILE_LIMIT + "\n[export]\nout = 'o'\n")
    big = run("run", "--check", "big.toml")
    assert big.exit_code == 2
    assert f"job file big.toml is over {SETTINGS_FILE_LIMIT} bytes" in big.stderr
    Path("latin.toml").write_bytes(b"[export]\nout = 'caf\xe9'\n")
    latin = run("run", "--check", "latin.toml")
    assert latin.exit_code == 2
    assert (
        "job file latin.toml is not valid TOML: the byte at offset 19 is not UTF-8" in latin.stderr
    )


def test_a_config_file_nested_thousands_deep_is_exit_2_naming_the_file(isolated: Path) -> None:
    Path("petsync.toml").write_text("[environments.x]\nbase_url = " + "[" * 5000 + "\n")
    result = run("config", "show", "--check")
    assert result.exit_code == 2, result.output
    assert "petsync.toml nests arrays or tables too deeply to read" in result.stderr
    assert "internal error" not in result.output
    shown = run("config", "show")  # without --check it shows the rest, and the problem
    assert shown.exit_code == 0, shown.output
    assert "petsync.toml nests arrays or tables too deeply to read" in shown.stdout
