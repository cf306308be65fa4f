"""The ``petsync`` command line: thin over the library.

Each command turns its options into a config object, calls one library function, renders
its report and exits with the documented code. Only this module imports click; heavy
libraries (pandas, pyarrow, the server) are imported inside the commands that need them,
so ``petsync --help`` starts fast.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from petsync._version import __version__
from petsync.core.apikey import redact
from petsync.core.errors import ConfigError, ExitCode, PetsyncError
from petsync.core.interface import PAGINATION_STYLES, SERVER_PAGINATION_STYLES
from petsync.core.models import STATUS_VALUES
from petsync.ops.logs import DEFAULT_LOG_LEVEL, LOG_FORMATS, LOG_LEVELS

if TYPE_CHECKING:
    from petsync.ops.jobfile import JobFile, JobKind, OptionSpec
    from petsync.ops.settings import Target

F = TypeVar("F", bound=Callable[..., Any])


class PetsyncGroup(click.Group):
    """Catches :class:`PetsyncError` once: the message on stderr, the error's exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PetsyncError as exc:
            _echo_error(exc)
            ctx.exit(int(exc.exit_code))


def _echo_error(exc: PetsyncError) -> None:
    """``Error: message`` on stderr; with JSON logs an ``error`` event, so stderr stays JSON."""
    message = redact(str(exc))
    if _json_logs():
        fields = {"message": message, "error": type(exc).__name__}
        logging.getLogger("petsync.cli").error(
            "error", extra={"fields": {**fields, "exit_code": int(exc.exit_code)}}
        )
    else:
        click.echo(f"Error: {message}", err=True)


# Where the options that commands do not take as parameters are kept for the command's
# run (see `resolve_cli_target`, `metrics_options`): the context's meta is shared by a
# command's context and its parent's, so `run` can set them for the command it invokes.
META_PREFIX = "petsync."


def _remember_option(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    if value is not None and value is not False and param.name:
        ctx.meta.setdefault(META_PREFIX + param.name, value)


def target_options(func: F) -> F:
    """Options shared by every command that talks to the API.

    ``--env``, ``--config`` and ``--allow-insecure-http`` are not passed to the command
    function: they are kept on the click context and read by :func:`resolve_cli_target`.
    """
    func = click.option(
        "--allow-insecure-http",
        is_flag=True,
        expose_value=False,
        callback=_remember_option,
        help="Allow plain http:// to a host that is not loopback (the key crosses in clear).",
    )(func)
    func = click.option(
        "--config",
        type=click.Path(dir_okay=False, path_type=Path),
        expose_value=False,
        callback=_remember_option,
        help="Config file to read instead of ./petsync.toml or ~/.config/petsync/petsync.toml.",
    )(func)
    func = click.option(
        "--env",
        metavar="NAME",
        expose_value=False,
        callback=_remember_option,
        help="Environment of the config file to use. Default: production.",
    )(func)
    func = click.option(
        "--api-key-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="File holding the API key (mode 600). Default: PETSYNC_<ENV>_API_KEY, then the "
        "environment's api_key_file, then PETSYNC_API_KEY.",
    )(func)
    func = click.option(
        "--base-url",
        metavar="URL",
        help="API base address ending with /v1. Default: PETSYNC_BASE_URL, then the "
        "environment's base_url in the config file.",
    )(func)
    return func


def metrics_options(func: F) -> F:
    """``--metrics-file PATH``: after the run, write the Prometheus metrics file.

    The command stores its report with :func:`remember_report`; the wrapper times the run,
    takes the exit code however the command ends, and writes the file even when it fails.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _run_with_metrics(func, *args, **kwargs)

    return click.option(
        "--metrics-file",
        type=click.Path(dir_okay=False, path_type=Path),
        expose_value=False,
        callback=_remember_option,
        help="Write Prometheus metrics here after the run (node_exporter textfile, *.prom).",
    )(wrapper)  # type: ignore[return-value]


def _environ() -> dict[str, str]:
    return dict(os.environ)


@click.group(cls=PetsyncGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="petsync")
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default="text",
    show_default=True,
    envvar="PETSYNC_LOG_FORMAT",
    help="Log lines on stderr: text, or json (one object per line: time, level, event, fields).",
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS),
    default=DEFAULT_LOG_LEVEL,
    show_default=True,
    envvar="PETSYNC_LOG_LEVEL",
    help="Least severe log lines shown.",
)
@click.pass_context
def cli(ctx: click.Context, log_format: str, log_level: str) -> None:
    """Export the Petstore catalogue to snapshots and import animals from spreadsheets.

    \b
    Exit codes: 0 success, 1 failure, 2 usage or configuration error,
    3 authentication refused (401), 4 finished but incomplete.
    """
    _start_logging(ctx, log_format, log_level)


# -- check, get --


def _api_client(target_opts: dict[str, Any]) -> Any:
    """A PetstoreClient for the target the shared options (and environment) name."""
    from petsync.client.client import PetstoreClient

    target = resolve_cli_target(**target_opts)
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


# -- serve --


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
    fail_after_store_rate: float,
    fault_seed: int,
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

    from petsync.core.apikey import ENV_API_KEY, ApiKey, read_key_file
    from petsync.server.app import ServerConfig
    from petsync.server.faults import Faults
    from petsync.server.runner import RunningServer, serve_forever

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
            f"Generated API key (shown once; give it to clients as {ENV_API_KEY}): {key.reveal()}"
        )
    faults = Faults(
        fail_rate=fail_rate,
        rate_limit=rate_limit,
        latency_ms=latency_ms,
        fail_after_store_rate=fail_after_store_rate,
        seed=fault_seed,
    )
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
            click.echo(f"Not seeding: {where} holds or once held pets")
        click.echo(f"Catalogue: {stored} pets in {where}; pagination: {pagination}")
        injected = [
            f"{name} {value:g}"
            for name, value in (
                ("fail-rate", fail_rate),
                ("rate-limit", rate_limit or 0),
                ("latency-ms", latency_ms),
                ("fail-after-store-rate", fail_after_store_rate),
                ("page-cap", page_cap or 0),
            )
            if value
        ]
        if injected:
            click.echo(f"Injected faults: {', '.join(injected)} (seed {fault_seed})")
        click.echo(f"Serving Petstore at {srv.base_url}")
        click.echo("Stop with Ctrl-C or SIGTERM.")

    serve_forever(config, host=host, port=port, on_ready=ready)
    click.echo("Stopped.")


# -- export, demo, diff --


def _max_drop(value: str) -> float:
    """Parse --max-drop: a percentage (``20%``) or a fraction (``0.2``)."""
    text = value.strip()
    try:
        fraction = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        fraction = -1.0
    if not 0.0 <= fraction <= 1.0:
        raise click.BadParameter(f"{value!r} is not a share of pets; use e.g. 20% or 0.2")
    return fraction


def _export_summary(report: Any) -> list[str]:
    """The human summary of an ExportReport (also used by the demo)."""
    counts = ", ".join(f"{status} {count}" for status, count in report.by_status.items())
    unknown = sum(report.unknown_status.values())
    state = "complete" if report.complete else "INCOMPLETE"
    lines = [
        f"snapshot {report.snapshot_date}: {report.pets} pets ({counts}, no status "
        f"{report.no_status}, unknown status {unknown}), quarantined {report.quarantined}",
        f"took {report.duration_seconds:.1f} s, {report.pets_per_second:.0f} pets/s, {state}"
        + (", suspicious drop" if report.drop.flagged else ""),
        f"written to {report.snapshot_path}",
    ]
    if report.pruned:
        lines.append(f"pruned {len(report.pruned)} older snapshot(s)")
    return lines


def _prefer_system_allocator() -> None:
    """Let Arrow allocate with malloc, unless the user chose otherwise.

    Arrow's default allocator (mimalloc) cannot reuse the memory Python frees after paging;
    malloc can: peak RSS of a 1M-pet export falls by about 50 MiB. Read once, when pyarrow
    is first imported, hence before the export modules are.
    """
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


def _progress_display() -> Any:
    import io

    from petsync.cli.progress import ProgressDisplay

    stream = sys.stderr  # CliRunner swaps it; click.get_text_stream is deprecated in click 8.5
    if _json_logs() and not stream.isatty():
        # stderr carries JSON lines only; the export.listing_done log event has the same facts.
        return ProgressDisplay(io.StringIO(), live=False)
    return ProgressDisplay(stream, live=stream.isatty())


def _finish_export(ctx: click.Context, report: Any) -> None:
    for line in _export_summary(report):
        click.echo(line)
    # With JSON logs the export.warning events carry the warnings; stderr stays JSON.
    for warning in [] if _json_logs() else report.warnings:
        click.echo(f"Warning: {redact(warning)}", err=True)
    if report.exit_code != ExitCode.OK:
        ctx.exit(int(report.exit_code))


@cli.command("export")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Snapshot directory; each run writes OUT/pets/snapshot_date=YYYY-MM-DD/.",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(STATUS_VALUES),
    help="Export only this status (repeatable). Default: all three.",
)
@click.option(
    "--sweep/--no-sweep",
    default=True,
    show_default=True,
    help="Also page the unfiltered list, to catch pets with no or an unknown status.",
)
@click.option(
    "--format",
    "file_format",
    type=click.Choice(["parquet", "both"]),
    default="both",
    show_default=True,
    help="Write Parquet only, or Parquet and CSV.",
)
@click.option("--strict", is_flag=True, help="Fail (exit 1) and publish nothing if incomplete.")
@click.option("--keep", type=click.IntRange(min=1), help="Keep only the newest N snapshots.")
@click.option(
    "--max-drop",
    default="20%",
    show_default=True,
    metavar="SHARE",
    help="Flag (exit 4) a pet count that fell by more than this since the last snapshot.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Listings paged at the same time (1 = one after another).",
)
@click.option(
    "--pagination",
    type=click.Choice(PAGINATION_STYLES),
    default="auto",
    show_default=True,
    help="How the API pages (auto detects it and proves the end).",
)
@metrics_options
@target_options
@click.pass_context
def export_command(
    ctx: click.Context,
    /,
    out_dir: Path,
    statuses: tuple[str, ...],
    sweep: bool,
    file_format: str,
    strict: bool,
    keep: int | None,
    max_drop: str,
    concurrency: int,
    pagination: str,
    **target_opts: Any,
) -> None:
    """Export the catalogue into a dated Parquet + CSV snapshot under OUT.

    Pages GET /pets per status and once unfiltered, deduplicates by id and publishes
    OUT/pets/snapshot_date=YYYY-MM-DD/ atomically (pets.parquet, _pets.csv,
    _quarantine.jsonl, _manifest.json). Exits 4 when the listing cannot be proven complete
    or the pet count dropped by more than --max-drop (the snapshot is written and flagged);
    with --strict that is a failure (exit 1) and nothing is published.

    \b
    Example (nightly, from cron):
      petsync export --out /srv/petsync --keep 30
    Load it:
      python -c 'import petsync; print(petsync.load_snapshot("/srv/petsync"))'
    """
    _prefer_system_allocator()
    from petsync.core.models import PetStatus
    from petsync.export.config import ExportConfig
    from petsync.export.run import run_export

    target = resolve_cli_target(**target_opts)
    config = ExportConfig(
        client=target.client_config(pagination=pagination),
        out_dir=out_dir,
        statuses=tuple(PetStatus(s) for s in statuses) if statuses else tuple(PetStatus),
        sweep=sweep,
        format="parquet" if file_format == "parquet" else "both",
        strict=strict,
        keep=keep,
        max_drop=_max_drop(max_drop),
        concurrency=concurrency,
    )
    display = _progress_display()
    try:
        report = run_export(config, progress=display)
    finally:
        display.close()
    remember_report(report)
    _finish_export(ctx, report)


@cli.command()
@click.option(
    "--pets",
    type=click.IntRange(min=0),
    default=10_000,
    show_default=True,
    help="Pets in the seeded catalogue.",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("petsync-demo"),
    show_default=True,
    help="Snapshot directory.",
)
@click.pass_context
def demo(ctx: click.Context, pets: int, out_dir: Path) -> None:
    """Run the nightly export against a seeded reference server, in-process.

    Starts the reference server on a free 127.0.0.1 port with a generated key and PETS
    pets, exports it into OUT and prints the two lines that load the result in pandas and
    DuckDB. No network, no key to set up.

    \b
    Example:
      petsync demo --pets 100000 --out /tmp/petsync-demo
    """
    _prefer_system_allocator()
    from petsync.demo import run_demo

    display = _progress_display()
    try:
        result = run_demo(out_dir, pets, progress=display)
    finally:
        display.close()
    for line in _export_summary(result.export):
        click.echo(line)
    click.echo("")
    click.echo("Load it in Python with pandas, or query it with DuckDB:")
    click.echo(f"  {result.pandas_line}")
    click.echo(f"  {result.duckdb_line}")
    for warning in result.export.warnings:
        click.echo(f"Warning: {warning}", err=True)
    if result.export.exit_code != ExitCode.OK:
        ctx.exit(int(result.export.exit_code))


@cli.command("diff")
@click.argument("old")
@click.argument("new")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Snapshot directory that dates refer to (the export's --out).",
)
@click.option("--details", is_flag=True, help="List the changed pets, not just counts.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")
def diff_command(old: str, new: str, directory: Path, details: bool, as_json: bool) -> None:
    """Show pets added, removed, renamed and moved between statuses from OLD to NEW.

    OLD and NEW are snapshot dates (YYYY-MM-DD, under --dir) or snapshot paths.

    \b
    Example:
      petsync diff 2026-11-21 2026-11-22 --dir /srv/petsync --details
    """
    import json

    from petsync.export.diff import diff_snapshots

    result = diff_snapshots(old, new, directory=directory)
    if as_json:
        click.echo(json.dumps(result.to_json(details=details), ensure_ascii=False, indent=2))
        return
    click.echo(
        f"from {result.old.date} ({result.old.path}) to {result.new.date} ({result.new.path})"
    )
    click.echo(f"added:         {result.added}")
    click.echo(f"removed:       {result.removed}")
    click.echo(f"renamed:       {result.renamed}")
    click.echo(f"recategorised: {result.recategorised}")
    transitions = result.status_transitions
    click.echo(f"status changes: {sum(transitions.values())}")
    for (before, after), count in transitions.items():
        click.echo(f"  {before} -> {after}: {count}")
    if details:
        for title, frame in (
            ("added", result.added_rows),
            ("removed", result.removed_rows),
            ("renamed", result.renamed_rows),
            ("recategorised", result.recategorised_rows),
            ("status changes", result.transition_rows),
        ):
            if len(frame):
                click.echo(f"\n{title}:")
                click.echo(frame.to_string(index=False))


# -- import --


def _import_summary(report: Any) -> list[str]:
    """The human summary of an ImportReport."""
    read = f"read {report.source}: {report.rows_read} rows, {report.skipped_blank} blank skipped"
    if report.sheet is not None:
        read += f", sheet {report.sheet!r}"
    else:
        read += f", encoding {report.encoding}, delimiter {report.delimiter}"
    lines = [read]
    if report.encoding_notice:
        lines.append(f"  note: {report.encoding_notice}")
    if report.dry_run:
        lines.append(
            f"dry run: {report.would_send} rows would be sent, nothing sent; rejected locally "
            f"{report.rejected_local}"
        )
    else:
        lines.append(
            f"created {report.created}, already done {report.already_created} (earlier runs), "
            f"rejected {report.rejected_local + report.rejected_api} (local "
            f"{report.rejected_local}, api {report.rejected_api}), uncertain "
            f"{report.uncertain}, pending {report.pending}"
        )
    if report.normalisations:
        done = ", ".join(f"{name} {count}" for name, count in report.normalisations.items())
        lines.append(f"normalised: {done}")
    lines.append(f"took {report.elapsed_seconds:.1f} s, {report.rows_per_second:.0f} rows/s")
    if report.stopped_reason:
        lines.append(f"stopped: {redact(report.stopped_reason)}")
    rejects = report.files.get("rejects")
    if rejects and (report.rejected_local or report.rejected_api):
        lines.append(f"rejects:   {rejects}  (fix them, then: petsync import {rejects})")
    if report.files.get("accepted"):
        lines.append(f"accepted:  {report.files['accepted']}")
    uncertain = report.files.get("uncertain")
    if uncertain and report.uncertain:
        lines.append(
            f"uncertain: {uncertain}  (check which pets exist; delete those rows, then: "
            f"petsync import {uncertain})"
        )
    if report.pending and not report.dry_run:
        lines.append("pending rows were not sent: re-run the same command to resume")
    return lines


@cli.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--sheet", metavar="NAME", help=".xlsx: the sheet to read. Default: the first.")
@click.option(
    "--encoding",
    metavar="NAME",
    help="CSV encoding (e.g. cp1252). Default: detect (BOM, UTF-8, else cp1252 with a note).",
)
@click.option(
    "--delimiter",
    metavar="CHAR",
    help="CSV delimiter: comma, semicolon or tab. Default: detect from the header row.",
)
@click.option(
    "--map",
    "mappings",
    multiple=True,
    metavar='"COLUMN=field"',
    help="Read a field (name, categoryId, status) from a column with another header. Repeatable.",
)
@click.option(
    "--dry-run", is_flag=True, help="Check every row and write the reject file; send nothing."
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    default=8,
    show_default=True,
    help="POST requests in flight at once.",
)
@click.option(
    "--max-errors",
    type=click.IntRange(min=1),
    metavar="N",
    help="Stop after N rejected rows; the rest stay pending for a re-run.",
)
@click.option(
    "--out-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the rejects/accepted/uncertain files and the journal go. Default: beside FILE.",
)
@click.option(
    "--journal",
    "journal_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Journal path. Default: FILE's stem + .journal.jsonl in the output directory.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the summary as JSON here.",
)
@click.option(
    "--resend-uncertain",
    is_flag=True,
    help="Send the uncertain rows again (only after checking that those pets do not exist).",
)
@metrics_options
@target_options
@click.pass_context
def import_command(
    ctx: click.Context,
    /,
    file: Path,
    sheet: str | None,
    encoding: str | None,
    delimiter: str | None,
    mappings: tuple[str, ...],
    dry_run: bool,
    concurrency: int,
    max_errors: int | None,
    out_dir: Path | None,
    journal_path: Path | None,
    report_path: Path | None,
    resend_uncertain: bool,
    **target_opts: Any,
) -> None:
    """Create one pet per spreadsheet row (CSV or .xlsx) with POST /pets.

    Rows are checked first (name; categoryId an int64 integer; status available, pending
    or sold, or blank); bad rows go to FILE_STEM.rejects.csv with the reason, created rows
    to FILE_STEM.accepted.csv with their new id, rows whose outcome is unknown to
    FILE_STEM.uncertain.csv. A journal makes re-running the same command safe: it resumes
    and never creates a row twice. Exits 0 when every row was created, 4 when any was
    rejected, uncertain or left pending, 3 when the API refused the key, 2 for input errors.

    \b
    Examples:
      petsync import new-pets.csv --dry-run
      petsync import new-pets.xlsx --sheet April
      petsync import new-pets.rejects.csv          # after fixing the rejected rows
    """
    from petsync.importer.config import ImportConfig
    from petsync.importer.run import run_import

    config = ImportConfig(
        path=file,
        sheet=sheet,
        encoding=encoding,
        delimiter=delimiter,
        mappings=mappings,
        dry_run=dry_run,
        concurrency=concurrency,
        max_errors=max_errors,
        out_dir=out_dir,
        journal_path=journal_path,
        resend_uncertain=resend_uncertain,
    )
    if dry_run:
        report = run_import(config)
    else:
        with _api_client(target_opts) as client:
            report = run_import(config, client)
    remember_report(report)
    for line in _import_summary(report):
        click.echo(line)
    if report_path is not None:
        report.write_json(report_path)
    report.raise_for_stop()
    if report.exit_code != ExitCode.OK:
        ctx.exit(int(report.exit_code))


# -- run, config --

META_LOG = META_PREFIX + "log"
META_LOG_FORMAT = META_PREFIX + "log_format"
META_REPORT = META_PREFIX + "report"
META_JOB_NAME = META_PREFIX + "job_name"
META_ENV_SOURCE = META_PREFIX + "env_source"


def _start_logging(ctx: click.Context, log_format: str, log_level: str) -> None:
    """Install the redacting stderr handler for this invocation; removed when it ends."""
    from petsync.ops.logs import configure_logging, keys_from_environ

    handle = configure_logging(
        "json" if log_format == "json" else "text",
        stream=sys.stderr,
        level=log_level,
        keys=keys_from_environ(os.environ),
    )
    ctx.meta[META_LOG] = handle
    ctx.meta[META_LOG_FORMAT] = log_format
    ctx.call_on_close(handle.close)


def _json_logs() -> bool:
    """True when stderr must carry JSON log lines only (``--log-format json``)."""
    ctx = click.get_current_context(silent=True)
    return ctx is not None and ctx.meta.get(META_LOG_FORMAT) == "json"


def resolve_cli_target(
    base_url: str | None, api_key_file: Path | None, *, require_key: bool = True
) -> Target:
    """The target of the running command: its ``target_options``, then the environment.

    Commands call this instead of :func:`petsync.ops.settings.resolve_target`, so ``--env``,
    ``--config``, ``--allow-insecure-http`` (and a job file's values) reach the resolution,
    and the resolved key is redacted from the log output.
    """
    from petsync.ops.logs import LogHandle
    from petsync.ops.settings import resolve_target

    meta = click.get_current_context().meta
    env_name = meta.get(META_PREFIX + "env")
    target = resolve_target(
        base_url=base_url,
        api_key_file=api_key_file,
        environ=_environ(),
        require_key=require_key,
        env_name=str(env_name) if env_name else None,
        env_source=str(meta.get(META_ENV_SOURCE, "--env")),
        config_path=meta.get(META_PREFIX + "config"),
        allow_insecure_http=bool(meta.get(META_PREFIX + "allow_insecure_http")),
    )
    handle = meta.get(META_LOG)
    if isinstance(handle, LogHandle):
        handle.add_key(target.api_key)
    return target


def remember_report(report: object) -> None:
    """Keep the command's report for ``--metrics-file`` (export and import call this)."""
    click.get_current_context().meta[META_REPORT] = report


def _run_with_metrics(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    ctx = click.get_current_context()
    path = ctx.meta.get(META_PREFIX + "metrics_file")
    if path is None:
        return func(*args, **kwargs)
    from petsync.ops.metrics import check_metrics_path

    check_metrics_path(Path(path))  # fail before the run, not after it
    started = time.monotonic()
    exit_code = int(ExitCode.FAILURE)
    try:
        result = func(*args, **kwargs)
        exit_code = int(ExitCode.OK)
        return result
    except click.exceptions.Exit as exc:
        exit_code = exc.exit_code
        raise
    except SystemExit as exc:
        exit_code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        raise
    except PetsyncError as exc:
        exit_code = int(exc.exit_code)
        raise
    finally:
        _write_run_metrics(ctx, Path(path), exit_code, time.monotonic() - started)


def _count(report: object, *names: str) -> int | None:
    for name in names:
        value = getattr(report, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, list | tuple):
            return len(value)
    return None


def _write_run_metrics(ctx: click.Context, path: Path, exit_code: int, duration: float) -> None:
    from petsync.ops.metrics import RunMetrics, write_metrics

    report = ctx.meta.get(META_REPORT)
    kind = ctx.command.name
    complete = getattr(report, "complete", None)
    run = RunMetrics(
        job=str(ctx.meta.get(META_JOB_NAME) or kind or "petsync"),
        finished_at=time.time(),
        duration_seconds=round(duration, 3),
        exit_code=exit_code,
        complete=bool(complete) if isinstance(complete, bool) else exit_code == 0,
        pets_exported=_count(report, "pets") if report is not None and kind == "export" else None,
        rows_created=_count(report, "created", "rows_created") if kind == "import" else None,
        rows_rejected=_count(report, "rejected", "rows_rejected") if kind == "import" else None,
        rows_uncertain=_count(report, "uncertain", "rows_uncertain") if kind == "import" else None,
    )
    try:
        write_metrics(path, run)
    except PetsyncError as exc:
        if exit_code == 0:
            raise
        _echo_error(exc)  # and keep the run's own exit code


def _job_parameters(command: click.Command) -> dict[str, click.Parameter]:
    """A command's parameters by job-file key: the long option name in snake_case."""
    found: dict[str, click.Parameter] = {}
    for param in command.params:
        if param.name is None:
            continue
        longs = [opt for opt in param.opts if opt.startswith("--")]
        key = longs[0][2:].replace("-", "_") if isinstance(param, click.Option) and longs else None
        found[key or param.name] = param
    return found


def _option_spec(key: str, param: click.Parameter) -> OptionSpec:
    from petsync.ops.jobfile import OptionKind, OptionSpec

    ptype = param.type
    choices: tuple[str, ...] = ()
    kind: OptionKind
    if isinstance(ptype, click.Choice):
        kind = "choice"
        choices = tuple(str(getattr(c, "value", c)) for c in ptype.choices)
    elif isinstance(ptype, click.Path):
        kind = "path"
    elif isinstance(ptype, click.types.BoolParamType) or getattr(param, "is_flag", False):
        kind = "boolean"
    elif isinstance(ptype, click.types.IntParamType):
        kind = "integer"
    elif isinstance(ptype, click.types.FloatParamType):
        kind = "float"
    else:
        kind = "string"
    multiple = bool(getattr(param, "multiple", False)) or param.nargs == -1
    help_text = str(getattr(param, "help", None) or "")
    return OptionSpec(key, kind, multiple, param.required, choices, help_text)


def _job_command(ctx: click.Context, kind: str) -> click.Command:
    command = cli.get_command(ctx, kind)
    if command is None:
        raise ConfigError(f"this petsync has no {kind} command to run the job with")
    return command


def _job_specs(ctx: click.Context) -> dict[JobKind, list[OptionSpec]]:
    specs: dict[JobKind, list[OptionSpec]] = {}
    for kind in ("export", "import"):
        command = cli.get_command(ctx, kind)
        params = _job_parameters(command) if command is not None else {}
        specs[kind] = [_option_spec(key, param) for key, param in params.items()]
    return specs


def _job_arguments(
    ctx: click.Context, job: JobFile, command: click.Command, overrides: dict[str, Any]
) -> dict[str, Any]:
    """Turn a checked job file into the command's arguments, as its own options would.

    Values given on the ``run`` command line win over the job file's.
    """
    params = _job_parameters(command)
    if job.env and META_PREFIX + "env" not in ctx.meta:
        ctx.meta[META_ENV_SOURCE] = f"job file {job.path}"
    arguments: dict[str, Any] = {}
    for key, value in job.options.items():
        param = params[key]
        try:
            converted = param.process_value(ctx, tuple(value) if isinstance(value, list) else value)
        except click.BadParameter as exc:
            raise ConfigError(f"job file {job.path} [{job.kind}]: {key}: {exc.message}") from exc
        if param.expose_value and param.name:
            arguments[param.name] = converted
    arguments.update({name: value for name, value in overrides.items() if value is not None})
    return arguments


@cli.command()
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Check the job file and the settings it would run with; contact nothing, run nothing.",
)
@target_options
@click.argument("jobfile", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def run(
    ctx: click.Context,
    check_only: bool,
    base_url: str | None,
    api_key_file: Path | None,
    jobfile: Path,
) -> None:
    """Run a saved job: a TOML file holding one [export] or [import] table.

    The table's keys are the command's long options in snake_case, plus `env`; options
    given here (--env, --base-url, ...) win over the file's. The metrics job label is the
    file's name without .toml.

    \b
    Example:
        petsync run jobs/nightly-export.toml
        petsync run --check jobs/bulk-import.toml
    """
    import json

    from petsync.ops.jobfile import load_job

    job = load_job(jobfile, _job_specs(ctx))
    command = _job_command(ctx, job.kind)
    arguments = _job_arguments(
        ctx, job, command, {"base_url": base_url, "api_key_file": api_key_file}
    )
    if check_only:
        target = resolve_cli_target(arguments.get("base_url"), arguments.get("api_key_file"))
        click.echo(f"{jobfile}: {job.kind} job {job.name!r} is valid")
        for line in _target_lines(target):
            click.echo(f"  {line}")
        for key, value in job.options.items():
            click.echo(f"  {key} = {json.dumps(value)}")
        return
    ctx.meta[META_JOB_NAME] = job.name
    ctx.invoke(command, **arguments)


def _target_lines(target: Target) -> list[str]:
    from petsync.core.apikey import ENV_API_KEY
    from petsync.ops.settings import env_key_variable

    key_help = (
        f"not set: set {env_key_variable(target.env_name)} or {ENV_API_KEY}, "
        "or pass --api-key-file PATH"
    )
    rows = [
        ("environment", target.env_name, target.env_source),
        (
            "config file",
            str(target.config_file) if target.config_file else "none",
            target.config_file_source or "no petsync.toml found",
        ),
        ("base URL", target.base_url, target.base_url_source),
        (
            "API key",
            "*** (hidden)" if target.api_key else key_help,
            target.api_key_source or "nowhere",
        ),
        (
            "insecure http",
            "allowed" if target.allow_insecure_http else "refused to non-loopback hosts",
            target.allow_insecure_http_source,
        ),
    ]
    keys = [target.api_key]
    return [redact(f"{label:<14}{value}  [{source}]", keys) for label, value, source in rows]


@cli.group()
def config() -> None:
    """Inspect the settings petsync resolves (environment, base URL, key)."""


@config.command("show")
@target_options
def config_show(base_url: str | None, api_key_file: Path | None) -> None:
    """Print the resolved settings and where each came from; the key is never shown.

    \b
    Example:
        petsync config show --env staging
    """
    target = resolve_cli_target(base_url, api_key_file, require_key=False)
    for line in _target_lines(target):
        click.echo(line)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="petsync")


__all__ = [
    "ExitCode",
    "cli",
    "main",
    "metrics_options",
    "remember_report",
    "resolve_cli_target",
    "target_options",
]

if __name__ == "__main__":  # pragma: no cover
    main()
