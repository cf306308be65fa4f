"""docs/cli.md is the CLI's own --help: cog regenerates it, and this test fails when it is stale."""

from __future__ import annotations

import io
import re
from pathlib import Path

import click
import pytest
from cogapp import Cog

from petsync.cli import cli

CLI_MD = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
FIX = "docs/cli.md is stale: run `.venv/bin/cog -r docs/cli.md` and commit the result"


def cog_check() -> tuple[int, str]:
    """Run cog's check mode on docs/cli.md in this process: (cog's exit code, its output)."""
    out = io.StringIO()
    cog = Cog()
    cog.set_output(stdout=out, stderr=out)
    code = cog.main(["cog", "--check", "--diff", f"--check-fail-msg={FIX}", str(CLI_MD)])
    return code, out.getvalue()


def option(command: click.Command, name: str) -> click.Parameter:
    return next(param for param in command.params if param.name == name)


def test_cli_reference_matches_the_help_of_every_command() -> None:
    code, output = cog_check()

    assert code == 0, output


def test_a_changed_option_help_makes_the_reference_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    export = cli.commands["export"]
    monkeypatch.setattr(option(export, "keep"), "help", "Keep the newest N snapshots, say.")

    code, output = cog_check()

    assert code == 5  # cog's "check failed"
    assert FIX in output and "Keep the newest N snapshots, say." in output


def test_a_new_command_makes_the_reference_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(cli.commands, "hello", click.Command("hello", help="Say hello."))

    code, output = cog_check()

    assert code == 5
    assert "petsync hello" in output


@pytest.mark.parametrize(
    "command",
    [
        "petsync",
        "petsync export",
        "petsync import",
        "petsync check",
        "petsync get",
        "petsync serve",
        "petsync demo",
        "petsync diff",
        "petsync run",
        "petsync config show",
    ],
)
def test_reference_has_a_section_with_the_usage_of(command: str) -> None:
    text = CLI_MD.read_text(encoding="utf-8")

    section = re.search(rf"^## {command}\n\n```text\nUsage: {command} ", text, re.M)

    assert section is not None, f"docs/cli.md has no '## {command}' section with its usage"
