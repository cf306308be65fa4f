"""The one table of settings and the command line stay in step.

Every option of every command is a setting of :mod:`petsync.core.settings_table` (or one
the command line keeps to itself, listed below with why), every setting names an option
a command has, and the keys a job file takes are exactly the settings' job-file keys.
"""

from __future__ import annotations

import click
import pytest

from petsync.cli.main import cli
from petsync.cli.run import job_specs
from petsync.core.settings_table import SETTINGS
from petsync.core.wording import Setting
from petsync.ops.jobfile import JOB_KINDS

# Options no message names as a setting: how the command line itself is driven.
COMMAND_LINE_ONLY: dict[str, str] = {
    "--help": "click's own",
    "--version": "click's own",
}


def _commands(
    command: click.Command, path: tuple[str, ...] = ()
) -> list[tuple[str, click.Command]]:
    found = [(" ".join(path) or "petsync", command)]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            found += _commands(sub, (*path, name))
    return found


COMMANDS = _commands(cli)


def _options(command: click.Command) -> set[str]:
    return {
        opt
        for param in command.params
        if isinstance(param, click.Option)
        for opt in param.opts
        if opt.startswith("--") and opt not in COMMAND_LINE_ONLY
    }


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_every_option_of_a_command_is_one_setting_of_the_table(
    name: str, command: click.Command
) -> None:
    for option in sorted(_options(command)):
        found = [s for s in SETTINGS if s.option == option and name in s.commands]
        assert len(found) == 1, f"petsync {name} {option}: {len(found)} settings in the table"


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.option or s.argument)
def test_every_setting_of_the_table_is_an_option_a_command_has(setting: Setting) -> None:
    commands = dict(COMMANDS)
    for name in setting.commands:
        assert name in commands, f"{setting}: no command {name!r}"
        if setting.option is not None:
            assert setting.option in _options(commands[name]), f"petsync {name}: no {setting}"
        if setting.off is not None:
            offs = {o for p in commands[name].params for o in getattr(p, "secondary_opts", [])}
            assert setting.off in offs


@pytest.mark.parametrize("kind", JOB_KINDS)
def test_the_keys_of_a_job_file_are_the_settings_keys(kind: str) -> None:
    ctx = click.Context(cli)
    keys = {spec.key for spec in job_specs(ctx, kind)}  # type: ignore[arg-type]
    table = {s.key for s in SETTINGS if kind in s.commands and s.key is not None}
    assert keys == table
