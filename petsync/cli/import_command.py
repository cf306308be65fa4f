"""``petsync import``: one pet per spreadsheet row, resumable, never a row twice."""

from __future__ import annotations

from pathlib import Path

import click

from petsync.cli.options import grace_option, metrics_file_option, target_options
from petsync.cli.render import import_summary
from petsync.cli.signals import stop_on_signals
from petsync.cli.state import CliState, TargetOptions, pass_state
from petsync.importer.config import DEFAULT_CONCURRENCY, MAX_CONCURRENCY, ImportConfig
from petsync.ops.metrics import record_run


@click.command("import")
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
    type=click.IntRange(1, MAX_CONCURRENCY),
    default=DEFAULT_CONCURRENCY,
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
@grace_option
@metrics_file_option
@target_options
@pass_state
def import_command(
    state: CliState,
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
    grace: float,
    metrics_file: Path | None,
    target: TargetOptions,
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
    from petsync.importer.run import run_import  # the job loads when it runs: --help stays fast

    with record_run(metrics_file, state.job_name("import"), on_write_error=state.echo_error) as run:
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
        with stop_on_signals(grace) as stop:
            if dry_run:  # a dry run sends nothing, so it needs no key
                report = run_import(config, stop=stop)
            else:
                with state.client(target) as client:
                    report = run_import(config, client, stop=stop)
        run.report(report)
        for line in import_summary(report):
            click.echo(line)
        if report_path is not None:
            report.write_json(report_path)
        report.raise_for_outcome()
