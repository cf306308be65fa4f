"""``petsync import``: one pet per spreadsheet row, resumable, never a row twice."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from petsync.cli.import_progress import shows_progress
from petsync.cli.import_shown import ImportShown, fix_options
from petsync.cli.options import grace_option, json_option, metrics_file_option, target_options
from petsync.cli.output import ReportTo, echo_json
from petsync.cli.render import import_total_line
from petsync.cli.signals import stop_on_signals
from petsync.cli.state import CliState, TargetOptions, pass_state, terminal_line
from petsync.core.errors import ConfigError
from petsync.importer.config import (
    DEFAULT_BASELINE,
    DEFAULT_CONCURRENCY,
    MAX_CONCURRENCY,
    MERGED_CHOICES,
    ImportConfig,
    MergedCells,
)
from petsync.importer.journal_home import journal_home
from petsync.ops.metrics import record_run


@click.command("import")
@click.argument("file", nargs=-1, required=True, metavar="FILE...")
@click.option("--sheet", metavar="NAME", help="Workbooks: the sheet to read. Default: the first.")
@click.option(
    "--encoding",
    metavar="NAME",
    help="CSV encoding (e.g. cp1252). Default: detect (BOM, UTF-8, UTF-16, else cp1252 with a "
    "note).",
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
    "--header-row",
    type=click.IntRange(min=1),
    metavar="N",
    help="The header's row number. Default: the first row of the first 20 that names the "
    "fields (rows above it, such as a title, are skipped).",
)
@click.option(
    "--category-map",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="A CSV or sheet of category names and their ids (columns name and categoryId): "
    "a categoryId cell that is a name is read through it. Default: the environment's "
    "category_map, else none.",
)
@click.option(
    "--merged-cells",
    type=click.Choice(MERGED_CHOICES),
    default="fill",
    show_default=True,
    help="Workbooks: a value merged over cells below the header fills each cell (as it "
    "shows), or they stay blank (their rows are rejected). The summary names the ranges.",
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
    help="Where the rejects/accepted/uncertain files go. Default: beside FILE.",
)
@click.option(
    "--journal",
    "journal_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Journal path (one FILE only). Default: SHA256.jsonl, by the file's content, in "
    "the journal folder of the API (see --state-dir).",
)
@click.option(
    "--state-dir",
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Where the journals of each API live: DIR/journals/API/. Default: the environment's "
    "state_dir, else $XDG_STATE_HOME/petsync (~/.local/state/petsync).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the summary as JSON here; '-' writes it to stdout instead of the text "
    "summary.",
)
@click.option(
    "--settle",
    is_flag=True,
    help="First decide each uncertain row from the API: rows with no pet of their content "
    "but this import's are sent once; with --baseline, rows found created are accepted; "
    "others stay uncertain with the candidate ids.",
)
@click.option(
    "--baseline/--no-baseline",
    default=DEFAULT_BASELINE,
    show_default=True,
    help="Before a file's first POST, list the pets that exist already, so --settle can also "
    "find uncertain rows created (one listing of the statuses the rows use: it grows with "
    "the catalogue). Without it, --settle sends only rows with no matching pet.",
)
@click.option(
    "--archive",
    "archive_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Move each fully processed FILE and its outputs into ARCHIVE/YYYY-MM-DD/.",
)
@click.option(
    "--allow-duplicates",
    is_flag=True,
    help="Send rows that repeat an earlier row of the sheet (every cell the same) as they "
    "are. Default: send such a row once and report the repeats.",
)
@click.option(
    "--resend-uncertain",
    is_flag=True,
    help="Send the uncertain rows again (only after checking that those pets do not exist).",
)
@json_option
@grace_option
@metrics_file_option
@target_options
@pass_state
def import_command(
    state: CliState,
    file: tuple[str, ...],
    sheet: str | None,
    encoding: str | None,
    delimiter: str | None,
    mappings: tuple[str, ...],
    header_row: int | None,
    category_map: Path | None,
    merged_cells: MergedCells,
    dry_run: bool,
    concurrency: int,
    max_errors: int | None,
    out_dir: Path | None,
    journal_path: Path | None,
    state_dir: Path | None,
    report_path: Path | None,
    settle: bool,
    baseline: bool,
    archive_dir: Path | None,
    allow_duplicates: bool,
    resend_uncertain: bool,
    as_json: bool,
    grace: float,
    metrics_file: Path | None,
    target: TargetOptions,
) -> None:
    """Create one pet per spreadsheet row (CSV, .xlsx, .xls, .xlsb, .ods) with POST /pets.

    Rows are checked first (name; categoryId an int64 integer; status available, pending
    or sold, or blank); bad rows go to STEM.rejects.csv with the reason, created rows
    to STEM.accepted.csv with their new id, rows whose outcome is unknown to
    STEM.uncertain.csv. A journal per file content makes re-running safe: it resumes,
    never creates a row twice, and the same bytes dropped again create nothing; a fixed
    reject file keeps its rows' identity, so a row is created once however often it is
    fixed. Rows repeated in the sheet are sent once. FILE may be a quoted glob ('inbox/*':
    every spreadsheet there): each file gets its own journal and outputs, and the run
    exits with the worst code. Exits 0 when every row was created, 4 when any was
    rejected, uncertain or left pending, 3 when the API refused the key, 2 for input
    errors, 143/130 when SIGTERM/Ctrl-C stopped it.

    \b
    Examples:
      petsync import new-pets.csv --dry-run
      petsync import new-pets.xlsx --sheet April
      petsync import new-pets.rejects.csv          # after fixing the rejected rows
      petsync import 'inbox/*' --archive done --settle
    """
    from petsync.importer.batch import run_batch  # the job loads when it runs
    from petsync.importer.inbox import expand_inputs

    paths = expand_inputs(file)
    if journal_path is not None and (len(paths) > 1 or len(file) > 1):
        raise ConfigError("--journal names one journal: give one FILE, or leave --journal out")
    with (
        stop_on_signals(grace, json_logs=state.json_logs) as stop,
        # A dry run did no work: its metrics would hide a missed night, so it writes none.
        record_run(
            None if dry_run else metrics_file,
            state.job_name("import"),
            on_write_error=state.echo_error,
        ) as run,
    ):
        report_to = ReportTo.parse(report_path)  # checked before anything is sent
        text = not (as_json or report_to.stdout)
        live = text and not dry_run and shows_progress(sys.stderr, state.environ)
        shown = ImportShown(
            text=text,
            live=live,
            terms=state.terms,
            fix_options=fix_options(state_dir, category_map),
        )
        home, category_map = _from_environment(
            state, target, state_dir, category_map, dry_run=dry_run
        )

        def config_for(path: Path) -> ImportConfig:
            return ImportConfig(
                path=path,
                sheet=sheet,
                encoding=encoding,
                delimiter=delimiter,
                mappings=mappings,
                header_row=header_row,
                category_map=category_map,
                merged_cells=merged_cells,
                dry_run=dry_run,
                concurrency=concurrency,
                max_errors=max_errors,
                out_dir=out_dir,
                journal_path=journal_path,
                journal_home=home,
                resend_uncertain=resend_uncertain,
                settle=settle,
                baseline=baseline,
                allow_duplicates=allow_duplicates,
            )

        if not paths and text:
            click.echo(terminal_line(f"no file matches {' '.join(file)}: nothing to import"))
        with contextlib.ExitStack() as stack:
            # A dry run sends nothing, so it needs no key.
            client = stack.enter_context(state.client(target)) if paths and not dry_run else None
            stack.enter_context(shown)
            batch = run_batch(
                paths,
                config_for,
                client,
                single=len(file) == 1 and paths == [Path(file[0])],
                stop=stop,
                archive_dir=archive_dir,
                progress_for=shown.progress,
                on_report=shown.report,
                on_failure=shown.failure,
                on_checked=shown.checked,
            )
        run.report(batch)
        if not text:
            echo_json(batch.to_json(state.terms))
        elif not batch.single and paths:
            click.echo(import_total_line(batch))
        report_to.write_file(batch, state.terms)
        batch.raise_for_outcome()


def _from_environment(
    state: CliState,
    target: TargetOptions,
    state_dir: Path | None,
    category_map: Path | None,
    *,
    dry_run: bool,
) -> tuple[Path | None, Path | None]:
    """The API's journal folder (None: a dry run with no API) and the category map: the
    options', else the environment's ``state_dir`` and ``category_map``."""

    try:
        resolved = state.resolve_target(target, require_key=False)
    except ConfigError:
        if dry_run:  # a dry run needs no API: it reads the output folder's journals only
            return None, category_map
        raise
    given = resolved.paths
    state_dir = state_dir or (given["state_dir"][0] if "state_dir" in given else None)
    category_map = category_map or (given["category_map"][0] if "category_map" in given else None)
    return journal_home(resolved.base_url, state_dir, state.environ, Path.home()), category_map
