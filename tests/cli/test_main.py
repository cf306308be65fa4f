"""The ``petsync`` group: its help, and the one boundary every error leaves through."""

from __future__ import annotations

import re

from click.testing import CliRunner

from petsync.cli import cli
from petsync.core.errors import ExitCode


def test_group_help_lists_every_exit_code() -> None:
    result = CliRunner().invoke(cli, ["--help"])

    epilog = " ".join(result.stdout.split("Exit codes:")[1].split())
    listed = [int(code) for code in re.findall(r"(?:^|, )(\d+) ", epilog)]
    assert listed == sorted(int(code) for code in ExitCode)
    assert "75 skipped: another run holds the lock" in epilog
