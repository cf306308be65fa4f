"""The import job: spreadsheet rows to POST /pets, with a journal so nothing is sent twice.

``run_import`` makes three streaming passes over the input, each in its own module:

1. **check** (:mod:`~petsync.importer.precheck`): read and validate every row before anything
   is sent, so a malformed file stops with nothing created;
2. **send** (:mod:`~petsync.importer.sender`): with ``baseline``, before a journal's first
   POST, the matching pets that exist already are recorded (:mod:`~petsync.importer.baseline`);
   ``settle`` decides uncertain rows from the API (:mod:`~petsync.importer.settle`); then worker
   threads POST the valid rows not yet done, each journaled ``sending`` (durably) before it
   leaves;
3. **write** (:mod:`~petsync.importer.outputs`): the reject, accepted and uncertain files
   are rebuilt from the input and the journal, so they are complete after a resumed run too.

A fixed reject file's rows keep the identity of the first file's rows: before sending, the
journals of every import of that first file are read (:mod:`~petsync.importer.provenance`),
and a row created or maybe created through any of them is not sent again.

Outcomes per row: created; rejected (locally, or by the API: final, into the reject file);
uncertain (sent, outcome unknown: never re-sent unless ``resend_uncertain``); pending (not
sent: a stop or ``--max-errors``; a re-run sends it).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from petsync.client.api import PetCreator, PetLister
from petsync.core.errors import ConfigError, PetsyncError
from petsync.core.stop import StopRequest
from petsync.importer.baseline import take_baseline
from petsync.importer.config import ImportConfig
from petsync.importer.contents import file_contents
from petsync.importer.journal import Journal, unfinished_journals
from petsync.importer.journal_home import journal_folder, journal_home, make_home
from petsync.importer.outcome import ImportReport
from petsync.importer.output_paths import OutputPaths, check_writable
from petsync.importer.output_rows import Outcome
from petsync.importer.outputs import WrittenOutputs, write_outputs
from petsync.importer.precheck import CheckedInput, check_input
from petsync.importer.provenance import Ledger, load_ledger, origin_lock, register_fix
from petsync.importer.row_states import RowState
from petsync.importer.sender import SendProgress, SendResult, send_rows
from petsync.importer.settle import settle_uncertain

logger = logging.getLogger(__name__)


def run_import(
    config: ImportConfig,
    client: ImportClient | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
    stop: StopRequest | None = None,
    progress: SendProgress | None = None,
    on_checked: Callable[[ImportReport], None] | None = None,
) -> ImportReport:
    """Import ``config.path``; see the module docstring. ``client`` may be None for a dry run.

    ``on_checked`` sees the report once the check pass has read the file, before anything
    is sent: what it says of the file (columns not sent, repeated rows) can be shown then.

    Input problems, and output or journal folders that cannot be written, raise
    :class:`~petsync.core.errors.UsageError` before anything is sent. A stop after sending
    began (401, API unreachable, ``stop`` requested by a signal) is returned in
    ``report.stop`` after the output files are written; call ``report.raise_for_stop()``
    to raise it. A ``stop`` requested before sending began raises
    :class:`~petsync.core.errors.StoppedError` at once, nothing sent.

    >>> report = run_import(ImportConfig(Path("pets.csv")), client)   # doctest: +SKIP
    >>> report.created, report.exit_code                               # doctest: +SKIP
    (120, <ExitCode.OK: 0>)
    """
    started = clock()
    if not config.dry_run and client is None:
        raise ConfigError("an import that sends rows needs a client (or pass dry_run=True)")
    checked = check_input(config, stop)
    try:
        with contextlib.ExitStack() as held:
            report = _checked_report(config, checked)
            if on_checked is not None:
                on_checked(report)
            return _run_checked(
                config, checked, report, client, clock, stop, progress, started, held
            )
    finally:
        checked.close()


def _run_checked(
    config: ImportConfig,
    checked: CheckedInput,
    report: ImportReport,
    client: ImportClient | None,
    clock: Callable[[], float],
    stop: StopRequest | None,
    progress: SendProgress | None,
    started: float,
    held: contextlib.ExitStack,
) -> ImportReport:
    """:func:`run_import` once the check pass has read the file."""
    if stop is not None and stop.requested:
        raise stop.error(
            f"the import of {config.path} was stopped by {stop.description}; nothing was sent"
        )
    home = _journal_home(config, client)
    journal_file = config.journal_path
    if journal_file is None:
        folder = journal_folder(
            config.out_dir if config.out_dir is not None else config.path.parent,
            home,
            checked.sha256,
            checked.origin,
        )
        journal_file = folder / f"{checked.sha256}.jsonl"
    paths = OutputPaths.for_input(
        config.path,
        config.out_dir,
        sha256=checked.sha256,
        journal=journal_file,
        fed_back=checked.petsync_written,
    )
    paths.check_writable()  # the folder, and no link or FIFO at an output's name
    journal: Journal | None = None
    ledger: Ledger | None = None
    if config.dry_run:
        # What the journals say: a row created (or maybe created) by an earlier run of
        # this file, or by a fix since, is neither "would be sent" nor a reject again.
        rows = checked.original_rows if checked.fed_back else None
        ledger = load_ledger(paths.journal.parent, checked.origin, None, rows)
    if not config.dry_run:
        journals = paths.journal.parent
        if journals == home:
            make_home(journals)
        check_writable(journals, "journal")
        # Every import of the rows of one first file holds the lock of its journal: two
        # fixes of one row must not both send it (see petsync.importer.provenance). The
        # first file's own import holds it as its journal.
        first = journals / f"{checked.origin}.jsonl"
        if checked.fed_back and not _has_content(first):
            report.notices.append(
                f"the journal of the first file these rows came from is not in {journals} "
                "(its import used another state directory, API or output folder, or it was "
                "moved): if so, import this file with that --state-dir or --out-dir, or rows "
                "created there could be created again"
            )
        if paths.journal != first:
            held.enter_context(origin_lock(journals, checked.origin))
        journal = Journal.open(
            paths.journal,
            source=config.path,
            sha256=checked.sha256,
            settings=checked.settings,
            outputs=paths.directory,
        )
        try:
            if checked.fed_back:
                register_fix(journals, checked.origin, paths.journal)
            ledger = load_ledger(
                journals,
                checked.origin,
                paths.journal,
                rows=checked.original_rows if checked.fed_back else None,
            )
        except BaseException:
            journal.close()
            raise
    try:
        if journal is not None and client is not None:
            report.already_imported = journal.resumed and _all_final(journal, checked)
            try:
                _list_before_sending(config, client, journal, checked, report, stop)
            except PetsyncError as exc:  # 401, API down: a stop with every row still pending
                report.stop = exc
                report.stopped_reason = (
                    f"stopped before sending: {exc}; re-run the same command to resume"
                )
            if report.stop is None:
                try:
                    sent = send_rows(
                        config,
                        client,
                        journal,
                        checked,
                        clock,
                        stop=stop,
                        progress=progress,
                        ledger=ledger,
                    )
                except KeyboardInterrupt:
                    # Ctrl-C: in-flight rows finished, the rest of their batches journaled
                    # unsent; leave complete output files behind, then let the interrupt go on.
                    journal.sync()
                    write_outputs(checked, paths, journal, ledger)
                    raise
                journal.sync()
                _count_sent(report, sent)
        try:
            written = write_outputs(checked, paths, journal, ledger)
        except Exception as exc:
            if journal is None or not report.created:
                raise
            # Pets were created: say so, and what failed, rather than lose the count.
            _outputs_failed(report, exc, paths)
            return _finish(report, client, config, clock, started)
        _count_written(report, written)
        report.notices.extend(written.notices)
        report.first_rejects = list(written.first_rejects)
        report.files = dict(written.files)
        if journal is not None:
            report.files["journal"] = str(paths.journal)
            journal.record_summary(pending=report.pending, uncertain=report.uncertain)
            if not journal.resumed and config.journal_path is None:
                report.notices.extend(
                    _earlier_unfinished(paths.journal, config.path, paths.directory)
                )
    finally:
        if journal is not None:
            report.journal_fsyncs = journal.fsyncs
            report.journal_fsync_seconds = journal.fsync_seconds
            journal.close()
    return _finish(report, client, config, clock, started)


def _journal_home(config: ImportConfig, client: ImportClient | None) -> Path | None:
    """The API's journal folder: the config's, else (as the command line does) the one
    under ``$XDG_STATE_HOME/petsync`` (``~/.local/state/petsync``) for ``client.base_url``,
    so a library caller importing the same file from two folders creates its rows once.
    None only for a dry run without a client: it reads the output folder's journals."""
    if config.journal_home is not None or client is None:
        return config.journal_home
    base_url = getattr(client, "base_url", None)  # a wrapper may not pass it on
    if not isinstance(base_url, str) or not base_url:
        raise ConfigError(
            f"the client {type(client).__name__} has no base_url, which names the folder "
            "of the API's import journals: give it one, or pass ImportConfig(journal_home=...)"
            " (nothing was sent)"
        )
    return journal_home(base_url, None, os.environ, Path.home())


def _finish(
    report: ImportReport,
    client: ImportClient | None,
    config: ImportConfig,
    clock: Callable[[], float],
    started: float,
) -> ImportReport:
    if client is not None and not config.dry_run:
        report.requests = client.requests
        report.retries = client.retries
    report.elapsed_seconds = clock() - started
    logger.info(
        "import_finished",
        extra={"fields": {k: v for k, v in report.to_json().items() if k != "files"}},
    )
    return report


def _outputs_failed(report: ImportReport, exc: Exception, paths: OutputPaths) -> None:
    """The write pass failed after pets were created: a stop that says what and why."""
    logger.debug("import_outputs_failed", exc_info=exc)
    why = str(exc) if isinstance(exc, PetsyncError) else f"{type(exc).__name__}: {exc}"
    report.stop = PetsyncError(
        f"{report.created} pets were created (the journal {paths.journal} records them), "
        f"but the output files could not be written: {why}. Fix that, then re-run the same "
        "command: it sends nothing twice and writes the files"
    )
    report.stopped_reason = "the output files could not be written"


def _list_before_sending(
    config: ImportConfig,
    client: ImportClient,
    journal: Journal,
    checked: CheckedInput,
    report: ImportReport,
    stop: StopRequest | None,
) -> None:
    """The listings before the send pass: a new journal's baseline (opt-in), then ``--settle``."""
    if config.baseline and journal.baseline is None and not journal.states:
        # Before the first POST: the pets of these contents that exist already. The file's
        # contents wait on disk beside the journal (a big file's would not fit in memory).
        with file_contents(checked, journal.path.with_name(journal.path.name + ".contents")) as c:
            baseline = take_baseline(client, c, stop)
        if stop is not None and stop.requested:  # cut short: never record it, send nothing
            raise stop.error(
                f"the import of {checked.path} was stopped by {stop.description} before "
                "sending; nothing was sent"
            )
        journal.record_baseline(baseline)
    elif config.baseline and journal.baseline is None:
        report.notices.append(
            f"--baseline applies from a file's first POST; {checked.path.name} was started "
            "without one, so --settle decides its rows without a baseline"
        )
    if config.settle:
        settled = settle_uncertain(journal, checked, client, stop)
        report.settled_created = settled.created
        report.settled_not_created = settled.not_created
        report.settled_undecided = settled.undecided
        report.settled_candidates = [(u.rows, u.candidates) for u in settled.undecided_rows]


def _has_content(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False


def _earlier_unfinished(journal: Path, source: Path, outputs: Path) -> list[str]:
    """Notes on earlier files of this name whose rows are not all done (a new file replaced
    one that was not finished: its pending and uncertain rows would be forgotten)."""
    notes = []
    for old in unfinished_journals(journal.parent, source.name, journal, outputs):
        left = (
            "was stopped mid-run"
            if old.pending is None
            else f"still has {old.pending} pending and {old.uncertain} uncertain rows"
        )
        notes.append(
            f"an earlier {source.name} (journal {old.path}) {left}: put that file back and "
            "import it (with --settle) to finish it"
        )
        logger.warning(
            "import_earlier_file_unfinished",
            # An outcome: the summary prints the note, so the text log leaves this out.
            extra={"fields": {"source": source.name, "journal": str(old.path)}, "outcome": True},
        )
    return notes


class ImportClient(PetCreator, PetLister, Protocol):
    """What the import needs of a client: createPet, listPets for the baseline and settle,
    and the API's base URL, which names the journals' home when the config gives none."""

    @property
    def base_url(self) -> str: ...


def _all_final(journal: Journal, checked: CheckedInput) -> bool:
    """True when an earlier run already took every valid row to a final state."""
    final = (RowState.CREATED, RowState.REJECTED)
    return sum(1 for r in journal.states.values() if r.state in final) >= checked.valid_rows


def _checked_report(config: ImportConfig, checked: CheckedInput) -> ImportReport:
    """A report of what the check pass found (the file, how it was read, its rows)."""
    repeats = checked.repeats
    notices = [
        f"--map {text!r} names no column of {config.path.name}; its columns are read by "
        "their headers"
        for text in checked.columns.ignored_maps
    ]
    merged = checked.merged
    if merged is not None:
        notices.append(merged.notice())
    return ImportReport(
        source=str(config.path),
        dry_run=config.dry_run,
        rows_read=checked.rows,
        skipped_blank=checked.blank_rows,
        encoding=checked.encoding_label,
        encoding_notice=checked.encoding_notice,
        delimiter=checked.delimiter,
        sheet=checked.sheet,
        header_row=checked.header_row,
        merged_cells=None
        if merged is None
        else {"mode": merged.mode, "cells": merged.cells, "ranges": list(merged.ranges)},
        columns=checked.column_names,
        columns_not_sent=checked.unsent_columns,
        map_hints=checked.columns.map_hints(checked.header),
        duplicates=0 if repeats is None else repeats.count,
        duplicate_rows=[] if repeats is None else [list(pair) for pair in repeats.listed],
        duplicates_sent=config.allow_duplicates,
        notices=notices,
    )


def _count_sent(report: ImportReport, sent: SendResult) -> None:
    if sent.mismatched:
        shown = ", ".join(map(str, sent.mismatched[:10]))
        more = f" and {len(sent.mismatched) - 10} more" if len(sent.mismatched) > 10 else ""
        report.notices.append(
            f"{len(sent.mismatched)} rows were created, but the API answered other values "
            f"than were sent (rows {shown}{more}; the journal says which): check those pets"
        )
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
        report.already_created = counts[Outcome.CREATED]  # by a fix of a rejected row
    else:  # the accepted file lists every row created so far; this run made `created`
        report.already_created = max(0, counts[Outcome.CREATED] - report.created)
