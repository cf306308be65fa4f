"""``petsync check`` and ``petsync get``: ask the API, print what it answered."""

from __future__ import annotations

import json
import warnings

import click

from petsync.cli.options import json_option, target_options
from petsync.cli.output import echo_json
from petsync.cli.render import check_document, check_lines
from petsync.cli.state import CliState, TargetOptions, pass_state
from petsync.core.models import INT64_MAX, INT64_MIN
from petsync.core.text import shown_text

HEADER_CHARS = 100  # of a header value the server sent


@click.command()
@json_option
@target_options
@pass_state
def check(state: CliState, as_json: bool, target: TargetOptions) -> None:
    """Check the API: reachable, key accepted, how it pages, round-trip time.

    Fetches pages of one pet, only as far as needed to name the pagination style
    ("none" when the whole catalogue came back, "unknown" when no way onwards could be
    proven). Exits 3 when the API refuses the key.

    \b
    Example:
      export PETSYNC_API_KEY=...   # or --api-key-file ~/.config/petsync/key
      petsync check --base-url https://petstore.example.com/v1
    """
    with state.client(target) as client:
        report = client.check()
    if as_json:
        echo_json(check_document(report))
        return
    for line in check_lines(report):
        click.echo(line)


@click.command()
@click.argument("pet_id", metavar="ID", type=click.IntRange(INT64_MIN, INT64_MAX))
@target_options
@pass_state
def get(state: CliState, pet_id: int, target: TargetOptions) -> None:
    """Print one pet as JSON with the deprecated getPet (GET /pets/ID).

    getPet is scheduled for removal on 5 December 2030; a notice goes to stderr. To list
    pets use the export instead.

    \b
    Example:
      petsync get 42 --base-url http://127.0.0.1:8080/v1
    """
    with state.client(target) as client, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        fetched = client.get_pet(pet_id)
    for warning in caught:
        click.echo(f"Deprecated: {warning.message}", err=True)
    for header, value in (("Deprecation", fetched.deprecation), ("Sunset", fetched.sunset)):
        if value is not None:  # the server's text: escaped and cut before the terminal
            click.echo(f"  the server sent {header}: {shown_text(value, HEADER_CHARS)}", err=True)
    # json.dumps writes Python ints exactly, so int64 ids survive (no float rounding).
    click.echo(json.dumps(fetched.pet.to_json(), ensure_ascii=False))
