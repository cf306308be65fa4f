"""``petsync config show``: the settings petsync resolves, and where each came from."""

from __future__ import annotations

import click

from petsync.cli.options import json_option, target_options
from petsync.cli.output import echo_json
from petsync.cli.render_settings import needs_lines, target_document, target_lines
from petsync.cli.state import CliState, TargetOptions, pass_state
from petsync.core.errors import ConfigError
from petsync.core.wording import COMMAND_LINE
from petsync.storage.credentials import describe_access
from petsync.storage.location import parse_location


@click.group()
def config() -> None:
    """Inspect the settings petsync resolves (environment, base URL, key)."""


@config.command("show")
@json_option
@target_options
@click.option(
    "--out",
    "out",
    metavar="LOCATION",
    default=None,
    help="Also show which credentials and endpoint a run writing there would use "
    "(gs://, az://, s3://); never a secret.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Exit 2 (after showing everything) when a command would still need a setting: "
    "for scripts.",
)
@pass_state
def config_show(
    state: CliState, as_json: bool, target: TargetOptions, out: str | None, check: bool
) -> None:
    """Print every setting, its value or "not set", where it came from, and what a command
    would still need. Exits 0 whatever is missing (--check: 2); the key is never shown.

    \b
    Example:
        petsync config show --env staging
        petsync config show --out gs://archive/petsync
        petsync config show --check || echo "not ready"
    """
    view = state.inspect_target(target)
    store = _store_access(out) if out is not None else None
    if as_json:
        document = target_document(view)
        if store is not None:
            document["store"] = {"value": out, "source": store}
        document["needs"] = [state.redact(need.render(COMMAND_LINE)) for need in view.needs]
        echo_json(document)
    else:
        for line in target_lines(view):
            click.echo(line)
        if store is not None:
            click.echo(f"{'store':<14}{out}  [{store}]")
        for line in needs_lines(view):
            click.echo(state.redact(line))
    if check and view.needs:
        raise ConfigError("not ready: " + view.needs[0])


def _store_access(out: str) -> str:
    """Which credentials a run on ``out`` would use (the settings' names, never a value)."""

    return describe_access(parse_location(out))
