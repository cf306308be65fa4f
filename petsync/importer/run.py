"""The import job: spreadsheet rows to POST /pets, with a journal so nothing is sent twice.

``run_import`` makes three streaming passes over the input, each in its own module:

1. **check** (:mod:`~petsync.importer.check`): read and validate every row before anything
   is sent, so a malformed file stops with nothing created;
2. **send** (:mod:`~petsync.importer.sender`): worker threads POST the valid rows not yet
   done, each journaled ``sending`` (durably) before it leaves;
3. **write** (:mod:`~petsync.importer.outputs`): the reject, accepted and uncertain files
   are rebuilt from the input and the journal, so they are complete after a resumed run too.

Outcomes per row: created; rejected (locally, or by the API: final, into the reject file);
uncertain (sent, outcome unknown: never re-sent unless ``resend_uncertain``); pending (not
sent: a stop or ``--max-errors``; a re-run sends it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from petsync.client.api import PetCreator
from petsync.core.errors import ConfigError
from petsync.importer.check import CheckedInput, check_input
from petsync.importer.config import ImportConfig
from petsync.importer.journal import Journal
from petsync.importer.outputs import Outcome, OutputPaths, WrittenOutputs, write_outputs
from petsync.importer.report import ImportReport
from petsync.importer.sender import SendResult, send_rows

logger = logging.getLogger(__name__)


def run_import(
    config: ImportConfig,
    client: PetCreator | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> ImportReport:
    """Import ``config.path``; see the module docstring. ``client`` may be None for a dry run.

    Input problems raise :class:`~petsync.core.errors.InputError` before anything is sent. A
    stop after sending began (401, API unreachable) is returned in ``report.stop`` after
    the output files are written; call ``report.raise_for_stop()`` to raise it.

    >>> report = run_import(ImportConfig(Path("pets.csv")), client)   # doctest: +SKIP
    >>> report.created, report.exit_code                               # doctest: +SKIP
    (120, <ExitCode.OK: 0>)
    """
    started = clock()
    if not config.dry_run and client is None:
        raise ConfigError("an import that sends rows needs a client (or pass dry_run=True)")
    paths = OutputPaths.for_input(config.path, config.out_dir, journal=config.journal_path)
    if config.out_dir is not None:
        try:
            config.out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create --out-dir {config.out_dir}: {exc}") from exc

    checked = check_input(config)
    report = _checked_report(config, checked)
    journal: Journal | None = None
    if not config.dry_run:
        journal = Journal.open(
            paths.journal, source=config.path, sha256=checked.sha256, settings=checked.settings
        )
    try:
        if journal is not None and client is not None:
            try:
                sent = send_rows(config, client, journal, checked, clock)
            except KeyboardInterrupt:
                # Ctrl-C: in-flight rows finished, the rest of their batches journaled unsent;
                # leave complete output files behind, then let the interrupt go on.
                journal.sync()
                write_outputs(checked, paths, journal)
                raise
            journal.sync()
            _count_sent(report, sent)
        _count_written(report, write_outputs(checked, paths, journal))
        report.files = paths.written(dry_run=journal is None)
    finally:
        if journal is not None:
            report.journal_fsyncs = journal.fsyncs
            report.journal_fsync_seconds = journal.fsync_seconds
            journal.close()
    if client is not None and not config.dry_run:
        report.requests = client.requests
        report.retries = client.retries
    report.elapsed_seconds = clock() - started
    logger.info(
        "import_finished",
        extra={"fields": {k: v for k, v in report.to_json().items() if k != "files"}},
    )
    return report


def _checked_report(config: ImportConfig, checked: CheckedInput) -> ImportReport:
    """A report of what the check pass found (the file, how it was read, its rows)."""
    return ImportReport(
        source=str(config.path),
        dry_run=config.dry_run,
        rows_read=checked.rows,
        skipped_blank=checked.blank_rows,
        encoding=checked.encoding_label,
        encoding_notice=checked.encoding_notice,
        delimiter=checked.delimiter,
        sheet=checked.sheet,
        columns=checked.column_names,
    )


def _count_sent(report: ImportReport, sent: SendResult) -> None:
    report.created = sent.created
    report.normalisations = sent.normalisations
    report.stop = sent.stop
    report.stopped_reason = sent.stopped_reason
    report.concurrency_final = sent.concurrency_final
    report.concurrency_lowest = sent.concurrency_lowest


def _count_written(report: ImportReport, written: WrittenOutputs) -> None:
    counts = written.counts
    report.rejected_local = counts[Outcome.REJECTED_LOCAL]
    report.rejected_api = counts[Outcome.REJECTED_API]
    report.uncertain = counts[Outcome.UNCERTAIN]
    report.pending = counts[Outcome.PENDING]
    report.would_send = counts[Outcome.WOULD_SEND]
    if report.dry_run:  # no send pass counted them
        report.normalisations = written.normalisations
    else:  # the accepted file lists every row created so far; this run made `created`
        report.already_created = max(0, counts[Outcome.CREATED] - report.created)
