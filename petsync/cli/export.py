"""``petsync export``: a dated snapshot of the catalogue."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from petsync.cli.allocator import prefer_system_allocator
from petsync.cli.options import (
    BYTE_SIZE,
    LOCATION,
    extra_fields_option,
    grace_option,
    json_option,
    metrics_file_option,
    target_options,
)
from petsync.cli.output import echo_json
from petsync.cli.progress import progress_display
from petsync.cli.render import export_document, export_summary
from petsync.cli.signals import stop_on_signals
from petsync.cli.state import CliState, TargetOptions, pass_state
from petsync.core.errors import ConfigError
from petsync.core.interface import CLOCK_TOLERANCE, PAGINATION_STYLES, PaginationStyle
from petsync.core.models import STATUS_VALUES, PetStatus
from petsync.core.settings_table import EXTRA_FIELDS
from petsync.export.config import (
    DEFAULT_CONCURRENCY,
    DEFAULT_EXTRA_FIELDS,
    DEFAULT_FORMAT,
    DEFAULT_MAX_DROP,
    DEFAULT_MEMORY_BUDGET,
    DEFAULT_STATUSES,
    DEFAULT_SWEEP,
    DEFAULT_TABLE_FORMAT,
    EXPORT_FORMATS,
    EXTRA_FIELDS_MODES,
    TABLE_FORMATS,
    ExportConfig,
    ExportFormat,
    ExtraFieldsMode,
)
from petsync.ops.metrics import record_run

if TYPE_CHECKING:
    from petsync.ops.settings import Target


@click.command("export")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=LOCATION,
    metavar="LOCATION",
    help="Snapshot directory, or an s3://, gs://, abfs:// or az:// URI; each run writes "
    "OUT/pets/snapshot_date=YYYY-MM-DD/.",
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
    default=DEFAULT_SWEEP,
    show_default=True,
    help="Also page the unfiltered list, to catch pets with no or an unknown status.",
)
@click.option(
    "--format",
    "file_format",
    type=click.Choice(EXPORT_FORMATS),
    default=None,
    show_default=f"{DEFAULT_FORMAT}; parquet with --table-format delta",
    help="Write Parquet only, or Parquet and CSV (not with --table-format delta).",
)
@click.option(
    "--table-format",
    type=click.Choice(TABLE_FORMATS),
    default=DEFAULT_TABLE_FORMAT,
    show_default=True,
    help="hive: a Parquet file (and CSV) per dated folder; delta: one Delta Lake table at "
    "OUT/pets, one commit per night (needs petsync[delta]); iceberg: the same as an Apache "
    "Iceberg table (needs petsync[iceberg]).",
)
@click.option("--strict", is_flag=True, help="Fail (exit 1) and publish nothing if incomplete.")
@click.option("--keep", type=click.IntRange(min=1), help="Keep only the newest N snapshots.")
@click.option(
    "--max-drop",
    default=f"{DEFAULT_MAX_DROP:.0%}",
    show_default=True,
    metavar="SHARE",
    help="Flag (exit 4) a pet count that fell by more than this since the last snapshot.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=DEFAULT_CONCURRENCY,
    show_default=True,
    help=(
        "Requests in flight at once: listings paged side by side, and pages read ahead "
        "where the pagination style allows (offset, page); 1 = one request at a time."
    ),
)
@click.option(
    "--pagination",
    type=click.Choice(PAGINATION_STYLES),
    default="auto",
    show_default=True,
    help="How the API pages (auto detects it and proves the end).",
)
@click.option(
    "--memory-budget",
    default=f"{DEFAULT_MEMORY_BUDGET // 2**20}MiB",
    show_default=True,
    metavar="SIZE",
    type=BYTE_SIZE,
    help="Peak memory to keep to, whatever the catalogue's size (what does not fit goes to "
    "the scratch area): e.g. 256MiB, 1GiB.",
)
@click.option(
    "--clock-tolerance",
    type=click.FloatRange(min=0),
    default=CLOCK_TOLERANCE,
    show_default=True,
    metavar="SECONDS",
    help="How far this machine's clock may be from the API's Date header; beyond it the "
    "run publishes nothing (the snapshot's date would be wrong) and exits 1.",
)
@click.option(
    "--scratch-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where working files go during the run (removed after it). Default: beside the "
    "snapshot being staged under OUT.",
)
@extra_fields_option
@json_option
@grace_option
@metrics_file_option
@target_options
@pass_state
def export_command(
    state: CliState,
    out_dir: str,
    statuses: tuple[str, ...],
    sweep: bool,
    file_format: ExportFormat | None,
    table_format: str,
    strict: bool,
    keep: int | None,
    max_drop: str,
    concurrency: int,
    pagination: PaginationStyle,
    memory_budget: int,
    scratch_dir: Path | None,
    extra_fields: ExtraFieldsMode | None,
    clock_tolerance: float,
    as_json: bool,
    grace: float,
    metrics_file: Path | None,
    target: TargetOptions,
) -> None:
    """Export the catalogue into a dated Parquet + CSV snapshot under OUT.

    Pages GET /pets per status and once unfiltered, deduplicates by id and publishes
    OUT/pets/snapshot_date=YYYY-MM-DD/ atomically (pets.parquet, _pets.csv,
    _quarantine.jsonl, _manifest.json). Exits 4 when the listing cannot be proven complete
    or the pet count dropped by more than --max-drop: the snapshot is written flagged, its
    rows in _pets.parquet.flagged, which pandas, DuckDB and polars reading OUT/pets skip.
    With --strict that is a failure (exit 1) and nothing is published.

    \b
    Example (nightly, from cron):
      petsync export --out /srv/petsync --keep 30
      petsync export --out s3://archive/petsync --keep 30
    Load it:
      python -c 'import petsync; print(petsync.load_snapshot("/srv/petsync"))'
    """
    prefer_system_allocator()
    # Signals are handled from the start: a SIGTERM while pandas loads still records metrics.
    with (
        stop_on_signals(grace, json_logs=state.json_logs) as stop,
        record_run(metrics_file, state.job_name("export"), on_write_error=state.echo_error) as run,
    ):
        resolved = state.resolve_target(target)
        config = ExportConfig(
            client=resolved.client_config(pagination=pagination),
            out_dir=out_dir,
            statuses=tuple(PetStatus(s) for s in statuses) or DEFAULT_STATUSES,
            sweep=sweep,
            format=file_format,
            strict=strict,
            keep=keep,
            max_drop=parse_max_drop(max_drop),
            concurrency=concurrency,
            memory_budget=memory_budget,
            scratch_dir=scratch_dir,
            table_format=table_format,
            extra_fields=extra_fields or extra_fields_setting(resolved),
            clock_tolerance=clock_tolerance,
        )
        from petsync.export.run import run_export

        with progress_display(
            sys.stderr, json_logs=state.json_logs, environ=state.environ
        ) as display:
            report = run_export(config, progress=display, stop=stop)
        run.report(report, complete=report.complete)
        if as_json:
            echo_json(export_document(report, state.terms))
        else:
            for line in export_summary(report, state.terms):
                click.echo(line)
        report.raise_for_outcome()


def extra_fields_setting(target: Target) -> ExtraFieldsMode:
    """The environment's ``extra_fields`` (petsync.toml), else the default, checked here."""
    value = target.extra_fields
    if value is None:
        return DEFAULT_EXTRA_FIELDS
    for mode in EXTRA_FIELDS_MODES:
        if value == mode:
            return mode
    raise ConfigError(
        f"{target.extra_fields_source}: {value!r} is no "
        + EXTRA_FIELDS
        + f" choice; use one of: {', '.join(EXTRA_FIELDS_MODES)}"
    )


def parse_max_drop(value: str) -> float:
    """Parse --max-drop: a percentage (``20%``) or a fraction (``0.2``).

    >>> parse_max_drop("20%"), parse_max_drop("0.35")
    (0.2, 0.35)
    """
    text = value.strip()
    try:
        fraction = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        fraction = -1.0
    if not 0.0 <= fraction <= 1.0:
        raise click.BadParameter(f"{value!r} is not a share of pets; use e.g. 20% or 0.2")
    return fraction
