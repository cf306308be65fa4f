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
@click.option(
    "--out",
    "out",
    metavar="LOCATION",
    default=None,
    help="Also show which credentials and endpoint a run writing there would use "
    "(gs://, az://, s3://); never a secret.",
)
@pass_state
def config_show(state: CliState, as_json: bool, target: TargetOptions, out: str | None) -> None:
    """Print the resolved settings and where each came from; the key is never shown.

    \b
    Example:
        petsync config show --env staging
        petsync config show --out gs://archive/petsync
    """
    resolved = state.resolve_target(target, require_key=False)
    store = _store_access(out) if out is not None else None
    if as_json:
        document = target_document(resolved)
        if store is not None:
            document["store"] = {"value": out, "source": store}
        echo_json(document)
        return
    for line in target_lines(resolved):
        click.echo(line)
    if store is not None:
        click.echo(f"{'store':<14}{out}  [{store}]")


def _store_access(out: str) -> str:
    """Which credentials a run on ``out`` would use (the settings' names, never a value)."""
    from petsync.export.location import parse_location
    from petsync.export.objectstore.credentials import describe_access

    return describe_access(parse_location(out))
