"""``petsync config show``: the settings petsync resolves, and where each came from."""

from __future__ import annotations

import click

from petsync.cli.options import json_option, target_options
from petsync.cli.output import echo_json
from petsync.cli.render import target_document, target_lines
from petsync.cli.state import CliState, TargetOptions, pass_state


@click.group()
def config() -> None:
    """Inspect the settings petsync resolves (environment, base URL, key)."""


@config.command("show")
@json_option
@target_options
@pass_state
def config_show(state: CliState, as_json: bool, target: TargetOptions) -> None:
    """Print the resolved settings and where each came from; the key is never shown.

    \b
    Example:
        petsync config show --env staging
    """
    resolved = state.resolve_target(target, require_key=False)
    if as_json:
        echo_json(target_document(resolved))
        return
    for line in target_lines(resolved):
        click.echo(line)
