"""The import job: spreadsheet rows to POST /pets, with a journal so nothing is sent twice.

``run_import`` is a pipeline of five stages, each in its own module, each handing its
result to the next; none opens again what an earlier one produced:

1. **read** (:mod:`~petsync.importer.sheets`): the spreadsheet opened once, its rows
   streamed;
2. **check** (:mod:`~petsync.importer.precheck`): every row read and checked before
   anything is sent, so a malformed file stops with nothing created; each row's verdict
   is kept (:mod:`~petsync.importer.checked_rows`) for the stages after;
3. **plan** (:mod:`~petsync.importer.plan`): the output paths, the journal, and the rows
   of the same first file that other imports created (:mod:`~petsync.importer.provenance`);
   then, with ``baseline``, before a journal's first POST, the matching pets that exist
   already are recorded (:mod:`~petsync.importer.baseline`), and ``settle`` decides
   uncertain rows from the API (:mod:`~petsync.importer.settle`);
4. **send** (:mod:`~petsync.importer.sender`): worker threads POST the valid rows not yet
   done, each journaled ``sending`` (durably) before it leaves;
5. **write** (:mod:`~petsync.importer.outputs`): the reject, accepted and uncertain files
   are rebuilt from the checked rows and the journal, so they are complete after a resumed
   run too.

A fixed reject file's rows keep the identity of the first file's rows: a row created or
maybe created through the import of any file of the same origin is not sent again.

Outcomes per row: created; rejected (locally, or by the API: final, into the reject file);
uncertain (sent, outcome unknown: never re-sent unless ``resend_uncertain``); pending (not
sent: a stop or ``--max-errors``; a re-run sends it).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Protocol

from petsync.client.api import PetCreator, PetLister
from petsync.core.errors import ConfigError, PetsyncError
from petsync.core.settings_table import BASELINE, SETTLE
from petsync.core.stop import StopRequest
from petsync.importer.baseline import take_baseline
from petsync.importer.config import ImportConfig
from petsync.importer.contents import file_contents
from petsync.importer.journal import Journal, unfinished_journals
from petsync.importer.outcome import ImportReport
from petsync.importer.outputs import write_outputs
from petsync.importer.plan import Destination, ImportPlan, journals_home, plan_import
from petsync.importer.precheck import CheckedInput, CheckRules, check_input
from petsync.importer.row_states import RowState
from petsync.importer.sender import SendProgress, send_rows
from petsync.importer.settle import settle_uncertain
from petsync.importer.sheets.opening import open_spreadsheet

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

    ``on_checked`` sees the report once the check stage has read the file, before anything
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
    # A signal ends the read; the later stages run to write the outputs.
    with open_spreadsheet(
        config.path, dataclasses.replace(config.read_options, stop=stop)
    ) as sheet:
        checked = check_input(
            sheet,
            CheckRules(
                config.mappings,
                config.header_row,
                config.merged_cells,
                config.category_map,
                config.allow_duplicates,
            ),
        )
    try:
        report = ImportReport.of_check(checked, config.dry_run, config.allow_duplicates)
        if on_checked is not None:
            on_checked(report)
        if stop is not None and stop.requested:
            raise stop.error(
                f"the import of {config.path} was stopped by {stop.description}; nothing was sent"
            )
        where = Destination(
            config.out_dir,
            config.journal_path,
            journals_home(config.journal_home, client),
            config.dry_run,
        )
        with contextlib.ExitStack() as held:
            plan = plan_import(checked, where, held)
            report.notices.extend(plan.notices)
            _import_planned(config, checked, plan, report, client, clock, stop, progress)
            if plan.journal is not None:
                report.journal_fsyncs = plan.journal.fsyncs
                report.journal_fsync_seconds = plan.journal.fsync_seconds
    finally:
        checked.close()
    if client is not None and not config.dry_run:
        report.requests = client.requests
        report.retries = client.retries
    report.elapsed_seconds = clock() - started
    logger.info(
        "import_finished",
        extra={"fields": {k: v for k, v in report.to_json(None).items() if k != "files"}},
    )
    return report


def _import_planned(
    config: ImportConfig,
    checked: CheckedInput,
    plan: ImportPlan,
    report: ImportReport,
    client: ImportClient | None,
    clock: Callable[[], float],
    stop: StopRequest | None,
    progress: SendProgress | None,
) -> None:
    """The stages after the plan: the listings before sending, send, write."""
    journal, ledger, paths = plan.journal, plan.ledger, plan.paths
    if journal is not None and client is not None:
        report.already_imported = journal.resumed and _all_final(journal, checked)
        try:
            _list_before_sending(config, client, journal, checked, report, stop)
        except PetsyncError as exc:  # 401, API down: a stop with every row still pending
            report.stop = exc
            report.stopped_reason = (
                "stopped before sending: " + exc.words + "; re-run the same command to resume"
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
                write_outputs(checked, paths, journal, ledger, input_encoding=config.encoding)
                raise
            journal.sync()
            report.count_sent(sent)
    try:
        written = write_outputs(checked, paths, journal, ledger, input_encoding=config.encoding)
    except Exception as exc:
        if journal is None or not report.created:
            raise
        # Pets were created: say so, and what failed, rather than lose the count.
        report.outputs_failed(exc, paths.journal)
        return
    report.count_written(written)
    if journal is not None:
        report.files["journal"] = str(paths.journal)
        journal.record_summary(pending=report.pending, uncertain=report.uncertain)
        if not journal.resumed and config.journal_path is None:
            # Earlier files of this name whose rows are not all done (a new file replaced one
            # that was not finished: its pending and uncertain rows would be forgotten).
            name = config.path.name
            for old in unfinished_journals(
                journal.path.parent, name, journal.path, paths.directory
            ):
                left = (
                    "was stopped mid-run"
                    if old.pending is None
                    else f"still has {old.pending} pending and {old.uncertain} uncertain rows"
                )
                report.notices.append(
                    f"an earlier {name} (journal {old.path}) {left}: put that file back and "
                    "import it (with " + SETTLE.given(True) + ") to finish it"
                )
                logger.warning(
                    "import_earlier_file_unfinished",
                    # An outcome: the summary prints the note, so the text log leaves this out.
                    extra={"fields": {"source": name, "journal": str(old.path)}, "outcome": True},
                )


def _list_before_sending(
    config: ImportConfig,
    client: ImportClient,
    journal: Journal,
    checked: CheckedInput,
    report: ImportReport,
    stop: StopRequest | None,
) -> None:
    """The listings before the send stage: a new journal's baseline (opt-in), then ``--settle``."""
    if config.baseline and journal.baseline is None and not journal.states:
        # Before the first POST: the pets of these contents that exist already. The file's
        # contents wait on disk beside the journal (a big file's would not fit in memory).
        with file_contents(
            checked.rows, journal.path.with_name(journal.path.name + ".contents")
        ) as c:
            baseline = take_baseline(client, c, stop)
        if stop is not None and stop.requested:  # cut short: never record it, send nothing
            raise stop.error(
                f"the import of {checked.path} was stopped by {stop.description} before "
                "sending; nothing was sent"
            )
        journal.record_baseline(baseline)
    elif config.baseline and journal.baseline is None:
        report.notices.append(
            BASELINE.given(True)
            + f" applies from a file's first POST; {checked.path.name} was started without "
            "one, so " + SETTLE.given(True) + " decides its rows without a baseline"
        )
    if config.settle:
        settled = settle_uncertain(journal, checked, client, stop)
        report.settled_created = settled.created
        report.settled_not_created = settled.not_created
        report.settled_undecided = settled.undecided
        report.settled_candidates = [(u.rows, u.candidates) for u in settled.undecided_rows]


class ImportClient(PetCreator, PetLister, Protocol):
    """What the import needs of a client: createPet, listPets for the baseline and settle,
    and the API's base URL, which names the journals' home when the config gives none."""

    @property
    def base_url(self) -> str: ...


def _all_final(journal: Journal, checked: CheckedInput) -> bool:
    """True when an earlier run already took every valid row to a final state."""
    final = (RowState.CREATED, RowState.REJECTED)
    return sum(1 for r in journal.states.values() if r.state in final) >= checked.valid_rows
