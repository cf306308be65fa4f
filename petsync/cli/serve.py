"""``petsync serve``: the reference Petstore server in the foreground."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from petsync.cli.state import CliState, pass_state
from petsync.client.config import is_loopback
from petsync.core.apikey import ENV_API_KEY
from petsync.core.interface import SERVER_PAGINATION_STYLES, ServerPagination
from petsync.server.extra_fields import EXTRA_FIELD_NAMES
from petsync.server.faults import Faults
from petsync.server.keys import serve_key

if TYPE_CHECKING:
    from petsync.server.runner import RunningServer


@click.command()
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Any other than loopback serves the key over plain HTTP "
    "to the network (a warning says so).",
)
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
    help="Fill a new catalogue with N deterministic demo pets (a --db that ever held pets "
    "is left as it is).",
)
@click.option(
    "--pagination",
    type=click.Choice(SERVER_PAGINATION_STYLES),
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
@click.option(
    "--fail-after-store-rate",
    type=click.FloatRange(0.0, 1.0),
    default=0.0,
    metavar="F",
    help="Fraction of POST /pets that store the pet, then answer 500 (outcome unknown).",
)
@click.option(
    "--fault-seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the random draws behind the fault rates (runs repeat).",
)
@click.option(
    "--extra-fields-demo",
    is_flag=True,
    help="Answer as a newer API would: pets carry fields beyond the interface's (tag, "
    "birthDate, weightKg, vaccinated, owner).",
)
@pass_state
def serve(
    state: CliState,
    host: str,
    port: int,
    api_key_file: Path | None,
    db_path: Path | None,
    seed_pets: int,
    pagination: ServerPagination,
    page_cap: int | None,
    fail_rate: float,
    rate_limit: float | None,
    latency_ms: float,
    fail_after_store_rate: float,
    fault_seed: int,
    extra_fields_demo: bool,
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
    from petsync.server.app import ServerConfig
    from petsync.server.runner import serve_forever

    warning = exposure_warning(host)
    if warning is not None:
        click.echo(warning, err=True)
    key = serve_key(api_key_file, state.environ)
    if key.generated:
        # The one place petsync prints a key, on purpose: the server's own fresh key, which
        # nobody else knows yet. Keys given by file or environment are never printed.
        click.echo(
            f"Generated API key (shown once; give it to clients as {ENV_API_KEY}): "
            f"{key.key.reveal()}"
        )
    faults = Faults(
        fail_rate=fail_rate,
        rate_limit=rate_limit,
        latency_ms=latency_ms,
        fail_after_store_rate=fail_after_store_rate,
        seed=fault_seed,
        extra_fields=extra_fields_demo,
    )
    config = ServerConfig(
        api_key=key.key,
        pagination=pagination,
        db_path=db_path,
        seed_pets=seed_pets,
        faults=faults,
        page_cap=page_cap,
    )

    def ready(srv: RunningServer) -> None:
        for line in ready_lines(srv):
            click.echo(line)

    serve_forever(config, host=host, port=port, on_ready=ready)
    click.echo("Stopped.")


def exposure_warning(host: str) -> str | None:
    """The warning for a listening address other than loopback, else None.

    The reference server speaks plain HTTP: on any other address every client's bearer key
    crosses the network in clear text.

    >>> exposure_warning("127.0.0.1") is None
    True
    """
    if is_loopback(host):
        return None
    where = "every interface of this host" if host in _ANY_ADDRESS else host
    return (
        f"Warning: listening on {where} (--host {host}), not loopback: clients send the API key "
        "over plain HTTP, readable by anyone on the network between them and this server. "
        "The reference server is for tests; keep it on 127.0.0.1, or put an HTTPS proxy in "
        "front of it."
    )


_ANY_ADDRESS = frozenset({"0.0.0.0", "::", "[::]", ""})


def ready_lines(srv: RunningServer) -> list[str]:
    """What the server says once it accepts requests: catalogue, faults, URL."""
    config, faults = srv.config, srv.config.faults
    where = str(config.db_path) if config.db_path is not None else "memory"
    lines: list[str] = []
    if srv.seeded:
        lines.append(f"Seeded {srv.seeded} demo pets into {where}")
    elif config.seed_pets:
        lines.append(f"Not seeding: {where} holds or once held pets")
    lines.append(f"Catalogue: {srv.store.count()} pets in {where}; pagination: {config.pagination}")
    injected = [
        f"{name} {value:g}"
        for name, value in (
            ("fail-rate", faults.fail_rate),
            ("rate-limit", faults.rate_limit or 0),
            ("latency-ms", faults.latency_ms),
            ("fail-after-store-rate", faults.fail_after_store_rate),
            ("page-cap", config.page_cap or 0),
        )
        if value
    ]
    if injected:
        lines.append(f"Injected faults: {', '.join(injected)} (seed {faults.seed})")
    if faults.extra_fields:
        lines.append(f"Extra fields beyond the interface's: {', '.join(EXTRA_FIELD_NAMES)}")
    lines.append(f"Serving Petstore at {srv.base_url}")
    lines.append("Stop with Ctrl-C or SIGTERM.")
    return lines
