"""The ``petsync`` command line: thin over the library.

Each command turns its options into a config object, calls one library function, renders
its report and exits with the documented code. Only this module imports click; heavy
libraries (pandas, pyarrow, the server) are imported inside the commands that need them,
so ``petsync --help`` starts fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from petsync._version import __version__
from petsync.apikey import redact
from petsync.errors import ExitCode, PetsyncError

F = TypeVar("F", bound=Callable[..., Any])


class PetsyncGroup(click.Group):
    """Catches :class:`PetsyncError` once: the message on stderr, the error's exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PetsyncError as exc:
            click.echo(f"Error: {redact(str(exc))}", err=True)
            ctx.exit(int(exc.exit_code))


def target_options(func: F) -> F:
    """Options shared by every command that talks to the API."""
    func = click.option(
        "--api-key-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="File holding the API key (mode 600). Default: the PETSYNC_API_KEY variable.",
    )(func)
    func = click.option(
        "--base-url",
        metavar="URL",
        help="API base address ending with /v1. Default: the PETSYNC_BASE_URL variable.",
    )(func)
    return func


def _environ() -> dict[str, str]:
    return dict(os.environ)


@click.group(cls=PetsyncGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="petsync")
def cli() -> None:
    """Export the Petstore catalogue to snapshots and import animals from spreadsheets.

    \b
    Exit codes: 0 success, 1 failure, 2 usage or configuration error,
    3 authentication refused (401), 4 finished but incomplete.
    """


# -- commands are added below, one section each ------------------------------------------
# Each section is owned by one piece of work; insert your commands right after your marker.

# -- section: check, get -------------------------------------------------------------------


def _api_client(target_opts: dict[str, Any]) -> Any:
    """A PetstoreClient for the target the shared options (and environment) name."""
    from petsync.client import PetstoreClient
    from petsync.settings import resolve_target

    target = resolve_target(environ=_environ(), **target_opts)
    return PetstoreClient(target.client_config())


@cli.command()
@target_options
def check(**target_opts: Any) -> None:
    """Check the API: reachable, key accepted, how it pages, round-trip time.

    Fetches pages of one pet, only as far as needed to name the pagination style
    ("none" when the whole catalogue came back, "unknown" when no way onwards could be
    proven). Exits 3 when the API refuses the key.

    \b
    Example:
      export PETSYNC_API_KEY=...   # or --api-key-file ~/.config/petsync/key
      petsync check --base-url https://petstore.example.com/v1
    """
    with _api_client(target_opts) as client:
        report = client.check()
    click.echo(f"base URL:     {report.base_url}")
    click.echo(f"key accepted: {'yes' if report.key_accepted else 'no'}")
    click.echo(f"pagination:   {report.pagination_style}")
    if report.pagination_note:
        click.echo(f"  note: {redact(report.pagination_note)}")
    click.echo(f"round trip:   {report.round_trip_seconds * 1000:.0f} ms")


@cli.command()
@click.argument("pet_id", metavar="ID", type=click.IntRange(-(2**63), 2**63 - 1))
@target_options
def get(pet_id: int, **target_opts: Any) -> None:
    """Print one pet as JSON with the deprecated getPet (GET /pets/ID).

    getPet is scheduled for removal on 5 December 2030; a notice goes to stderr. To list
    pets use the export instead.

    \b
    Example:
      petsync get 42 --base-url http://127.0.0.1:8080/v1
    """
    import json
    import warnings

    with _api_client(target_opts) as client, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DeprecationWarning)
        fetched = client.get_pet(pet_id)
    for warning in caught:
        click.echo(f"Deprecated: {warning.message}", err=True)
    for header, value in (("Deprecation", fetched.deprecation), ("Sunset", fetched.sunset)):
        if value is not None:
            click.echo(f"  the server sent {header}: {value}", err=True)
    # json.dumps writes Python ints exactly, so int64 ids survive (no float rounding).
    click.echo(json.dumps(fetched.pet.to_json(), ensure_ascii=False))


# -- section: serve ------------------------------------------------------------------------

_SERVER_STYLES = ("link", "cursor", "offset", "page", "none")  # = petsync.server's (tested)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Port to listen on; 0 picks a free one (the URL is printed).",
)
@click.option(
    "--api-key-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File holding the key clients must send (mode 600). Default: PETSYNC_API_KEY; "
    "with neither, a key is generated and printed once.",
)
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="SQLite file keeping the catalogue across restarts. Default: in memory.",
)
@click.option(
    "--seed-pets",
    type=click.IntRange(min=0),
    default=0,
    metavar="N",
    help="Fill an empty catalogue with N deterministic demo pets.",
)
@click.option(
    "--pagination",
    type=click.Choice(_SERVER_STYLES),
    default="link",
    show_default=True,
    help="How listPets pages: Link headers (keyset), cursor header, offset=, page=, or none.",
)
@click.option(
    "--page-cap",
    type=click.IntRange(min=1),
    metavar="N",
    help="Answer at most N pets a page, whatever the limit (to test clients).",
)
@click.option(
    "--fail-rate",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    metavar="F",
    help="Fraction of requests answered 503 (fault injection).",
)
@click.option(
    "--rate-limit",
    type=click.FloatRange(min=0.0, min_open=True),
    metavar="R",
    help="Allow R requests per second; beyond, answer 429 with Retry-After.",
)
@click.option(
    "--latency-ms",
    type=click.FloatRange(min=0.0),
    default=0.0,
    metavar="M",
    help="Add M milliseconds to every request.",
)
def serve(
    host: str,
    port: int,
    api_key_file: Path | None,
    db_path: Path | None,
    seed_pets: int,
    pagination: str,
    page_cap: int | None,
    fail_rate: float,
    rate_limit: float | None,
    latency_ms: float,
) -> None:
    """Run the reference Petstore server until Ctrl-C or SIGTERM.

    A local stand-in for the Petstore API: the interface's three operations under /v1,
    kept in SQLite, with an OpenAPI document at /v1/openapi.json and fault injection for
    trying jobs. The key clients must send comes from --api-key-file or PETSYNC_API_KEY
    (never from the command line).

    \b
    Example:
      PETSYNC_API_KEY=dev-key petsync serve --port 8080 --db pets.db --seed-pets 1000
      PETSYNC_BASE_URL=http://127.0.0.1:8080/v1 PETSYNC_API_KEY=dev-key petsync check
    """
    import secrets

    from petsync.apikey import ApiKey
    from petsync.server.app import ServerConfig
    from petsync.server.faults import Faults
    from petsync.server.runner import RunningServer, serve_forever
    from petsync.settings import ENV_API_KEY, read_key_file

    env_key = _environ().get(ENV_API_KEY, "").strip()
    if api_key_file is not None:
        key = read_key_file(api_key_file)
    elif env_key:
        key = ApiKey(env_key)
    else:
        key = ApiKey(secrets.token_urlsafe(24))
        # The one place petsync prints a key, on purpose: the server's own fresh key, which
        # nobody else knows yet. Keys given by file or environment are never printed.
        click.echo(
            f"Generated API key (shown once; give it to clients as {ENV_API_KEY}): "
            f"{key.reveal()}"
        )
    faults = Faults(fail_rate=fail_rate, rate_limit=rate_limit, latency_ms=latency_ms)
    config = ServerConfig(
        api_key=key,
        pagination=pagination,  # type: ignore[arg-type]  # click.Choice checked it
        db_path=db_path,
        seed_pets=seed_pets,
        faults=faults,
        page_cap=page_cap,
    )

    def ready(srv: RunningServer) -> None:
        where = str(db_path) if db_path is not None else "memory"
        stored = srv.store.count()
        if srv.seeded:
            click.echo(f"Seeded {srv.seeded} demo pets into {where}")
        elif seed_pets:
            click.echo(f"Not seeding: {where} already holds {stored} pets")
        click.echo(f"Catalogue: {stored} pets in {where}; pagination: {pagination}")
        click.echo(f"Serving Petstore at {srv.base_url}")
        click.echo("Stop with Ctrl-C or SIGTERM.")

    serve_forever(config, host=host, port=port, on_ready=ready)
    click.echo("Stopped.")

# -- section: export, demo, diff -----------------------------------------------------------

# -- section: import -----------------------------------------------------------------------

# -- section: run, config ------------------------------------------------------------------


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="petsync")


__all__ = ["ExitCode", "cli", "main", "target_options"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
