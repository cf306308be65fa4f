"""``petsync import``: one pet per spreadsheet row, resumable, never a row twice."""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from petsync.cli.import_progress import ImportProgressLine, shows_progress
from petsync.cli.options import grace_option, metrics_file_option, target_options
from petsync.cli.render import import_summary
from petsync.cli.signals import stop_on_signals
from petsync.cli.state import CliState, TargetOptions, pass_state
from petsync.core.errors import (
    ConfigError,
    ExitCode,
    IncompleteError,
    PetsyncError,
    StoppedError,
    UsageError,
)
from petsync.core.stop import StopRequest
from petsync.importer.config import DEFAULT_CONCURRENCY, MAX_CONCURRENCY, ImportConfig
from petsync.ops.metrics import record_run

if TYPE_CHECKING:
    from petsync.client.client import PetstoreClient
    from petsync.importer.report import ImportReport

# Which exit code wins when files of one run end differently: a signal, then a refused
# key, then input errors and failures, then an incomplete import, then success.
_SEVERITY = (ExitCode.OK, ExitCode.INCOMPLETE, ExitCode.FAILURE, ExitCode.USAGE, ExitCode.AUTH)


@click.command("import")
@click.argument("file", nargs=-1, required=True, metavar="FILE...")
@click.option("--sheet", metavar="NAME", help="Workbooks: the sheet to read. Default: the first.")
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
    help="Where the rejects/accepted/uncertain files and the journals go. Default: beside FILE.",
)
@click.option(
    "--journal",
    "journal_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Journal path (one FILE only). Default: .petsync/journals/SHA256.jsonl in the "
    "output directory, by the file's content.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the summary as JSON here.",
)
@click.option(
    "--settle",
    is_flag=True,
    help="First decide each uncertain row from the API: created rows are accepted, rows "
    "not created are sent once, others stay uncertain with the candidate ids.",
)
@click.option(
    "--archive",
    "archive_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Move each fully processed FILE and its outputs into ARCHIVE/YYYY-MM-DD/.",
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
    file: tuple[str, ...],
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
    settle: bool,
    archive_dir: Path | None,
    resend_uncertain: bool,
    grace: float,
    metrics_file: Path | None,
    target: TargetOptions,
) -> None:
    """Create one pet per spreadsheet row (CSV, .xlsx, .xls, .xlsb, .ods) with POST /pets.

    Rows are checked first (name; categoryId an int64 integer; status available, pending
    or sold, or blank); bad rows go to STEM.rejects.csv with the reason, created rows
    to STEM.accepted.csv with their new id, rows whose outcome is unknown to
    STEM.uncertain.csv. A journal per file content makes re-running safe: it resumes,
    never creates a row twice, and the same bytes dropped again create nothing. FILE may
    be a quoted glob ('inbox/*.csv'): each file gets its own journal and outputs, and the
    run exits with the worst code. Exits 0 when every row was created, 4 when any was
    rejected, uncertain or left pending, 3 when the API refused the key, 2 for input
    errors, 143/130 when SIGTERM/Ctrl-C stopped it.

    \b
    Examples:
      petsync import new-pets.csv --dry-run
      petsync import new-pets.xlsx --sheet April
      petsync import new-pets.rejects.csv          # after fixing the rejected rows
      petsync import 'inbox/*.csv' --archive done --settle
    """
    from petsync.importer.inbox import expand_inputs  # the job loads when it runs

    paths = expand_inputs(file)
    if journal_path is not None and (len(paths) > 1 or len(file) > 1):
        raise ConfigError("--journal names one journal: give one FILE, or leave --journal out")
    batch = Batch(single=len(file) == 1 and paths == [Path(file[0])])
    with (
        stop_on_signals(grace) as stop,
        record_run(metrics_file, state.job_name("import"), on_write_error=state.echo_error) as run,
    ):
        options = _Options(
            sheet, encoding, delimiter, mappings, dry_run, concurrency, max_errors, out_dir,
            journal_path, settle, resend_uncertain,
        )  # fmt: skip
        if not paths:
            click.echo(f"no file matches {' '.join(file)}: nothing to import")
        elif dry_run:  # a dry run sends nothing, so it needs no key
            _import_all(state, batch, paths, options, None, stop, archive_dir)
        else:
            with state.client(target) as client:
                _import_all(state, batch, paths, options, client, stop, archive_dir)
        run.report(batch)
        if not batch.single and paths:
            click.echo(batch.total_line())
        if report_path is not None:
            batch.write_json(report_path)
        batch.raise_for_outcome(state)


@dataclass(frozen=True)
class _Options:
    sheet: str | None
    encoding: str | None
    delimiter: str | None
    mappings: tuple[str, ...]
    dry_run: bool
    concurrency: int
    max_errors: int | None
    out_dir: Path | None
    journal_path: Path | None
    settle: bool
    resend_uncertain: bool

    def config(self, path: Path) -> ImportConfig:
        return ImportConfig(
            path=path,
            sheet=self.sheet,
            encoding=self.encoding,
            delimiter=self.delimiter,
            mappings=self.mappings,
            dry_run=self.dry_run,
            concurrency=self.concurrency,
            max_errors=self.max_errors,
            out_dir=self.out_dir,
            journal_path=self.journal_path,
            resend_uncertain=self.resend_uncertain,
            settle=self.settle,
        )


def _import_all(
    state: CliState,
    batch: Batch,
    paths: list[Path],
    options: _Options,
    client: PetstoreClient | None,
    stop: StopRequest,
    archive_dir: Path | None,
) -> None:
    """Import each file in turn; a stop, a refused key or a failing API ends the run."""
    from petsync.importer.inbox import archive_import, fully_processed
    from petsync.importer.run import run_import

    for path in paths:
        if stop.requested:  # the files not started are left for the next run, said so
            batch.failed(path, stop.error(f"stopped by {stop.description} before this file"))
            continue
        live = shows_progress(sys.stderr, state.environ) and not options.dry_run
        progress = ImportProgressLine(sys.stderr, path.name) if live else None
        try:
            report = run_import(options.config(path), client, stop=stop, progress=progress)
        except (UsageError, StoppedError) as exc:
            if batch.single:
                raise
            batch.failed(path, exc)  # a bad file does not keep the others from importing
            continue
        finally:
            if progress is not None:
                progress.close()
        if archive_dir is not None and fully_processed(report):
            archive_import(path, report, archive_dir, dt.date.today())
        batch.reports.append(report)
        for line in import_summary(report):
            click.echo(line)
        if report.archived_to:
            click.echo(f"archived:  {report.archived_to}")
        if report.stop is not None and not isinstance(report.stop, UsageError):
            break  # a stop, a refused key, the API down: the next file would meet it too


@dataclass
class Batch:
    """The reports of one ``petsync import`` run (several files), and their one outcome."""

    single: bool
    reports: list[ImportReport] = field(default_factory=list)
    failures: list[tuple[Path, PetsyncError]] = field(default_factory=list)

    def failed(self, path: Path, error: PetsyncError) -> None:
        self.failures.append((path, error))
        click.echo(f"{path}: not imported: {error}")

    def metric_counts(self) -> Mapping[str, int]:
        counts: dict[str, int] = {}
        for report in self.reports:
            for name, value in report.metric_counts().items():
                counts[name] = counts.get(name, 0) + value
        return counts

    def errors(self) -> list[PetsyncError]:
        found: list[PetsyncError] = [error for _, error in self.failures]
        found += [r.stop for r in self.reports if r.stop is not None]
        return found

    def exit_code(self) -> int:
        codes = [int(e.exit_code) for e in self.errors()]
        codes += [int(r.exit_code) for r in self.reports]
        return max(codes or [0], key=_rank)

    def total_line(self) -> str:
        total = self.metric_counts()
        pending = sum(r.pending for r in self.reports)
        return (
            f"{len(self.reports) + len(self.failures)} files ({len(self.failures)} not "
            f"imported): created {total.get('rows_created', 0)}, rejected "
            f"{total.get('rows_rejected', 0)}, uncertain {total.get('rows_uncertain', 0)}, "
            f"pending {pending}; exit {self.exit_code()}"
        )

    def write_json(self, path: Path) -> None:
        if self.single and self.reports:
            self.reports[0].write_json(path)
            return
        from petsync.importer.outputs import write_text_atomic

        document = {
            "imports": [r.to_json() for r in self.reports],
            "not_imported": [{"source": str(p), "error": str(e)} for p, e in self.failures],
            "exit_code": self.exit_code(),
        }
        write_text_atomic(path, json.dumps(document, indent=2) + "\n")

    def raise_for_outcome(self, state: CliState) -> None:
        """Raise the error of the worst outcome (after the summaries were printed)."""
        code = self.exit_code()
        if code == 0:
            return
        for error in self.errors():
            if int(error.exit_code) == code:
                raise error
        if self.single and self.reports:
            self.reports[0].raise_for_outcome()
        raise IncompleteError(
            f"{len(self.reports)} files imported, some rows rejected, uncertain or pending"
        )


def _rank(code: int) -> int:
    if code >= 128:  # a signal: 143 (SIGTERM) over 130 (Ctrl-C)
        return len(_SEVERITY) + code
    return _SEVERITY.index(ExitCode(code)) if code in set(_SEVERITY) else len(_SEVERITY)


__all__ = ["Batch", "import_command"]
