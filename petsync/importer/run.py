"""The import job: spreadsheet rows to POST /pets, with a journal so nothing is sent twice.

``run_import`` makes three streaming passes over the input:

1. **check**: read and validate every row, before anything is sent, so a malformed file
   stops with nothing created;
2. **send**: ``concurrency`` worker threads share one
   :class:`~petsync.client.client.PetstoreClient`; an adaptive limit decides how many of them
   send at once. A worker with a permit takes a batch of valid rows not yet done (reading
   and validating them itself, under one lock: no feeder thread, no hand-off per row),
   journals the batch ``sending`` (durably, one sync) and POSTs its rows one after
   another, journaling each outcome. Batches share a window of rows journaled but not yet
   answered (what a crash can leave uncertain), so fewer senders take bigger batches;
3. **write**: the reject, accepted and uncertain files are rebuilt from the input and the
   journal, so they are complete after a resumed run too.

Outcomes per row: created (201); rejected by the API (a 4xx other than 401/429: final,
into the reject file); uncertain (sent, then a timeout, a dropped connection or a 5xx: the
pet may exist, so it is never re-sent unless ``resend_uncertain``); unsent (surely not
created: a 401, or 429/refused connections beyond the client's retries): the run stops
and a re-run sends it. Rows left unsent are "pending".
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from petsync.core.apikey import redact
from petsync.core.errors import (
    ApiError,
    AuthenticationError,
    ConfigError,
    ExitCode,
    IncompleteError,
    InputError,
    OutcomeUnknownError,
    PetsyncError,
    ProtocolError,
    RetriesExhaustedError,
    TransportError,
)
from petsync.core.models import NewPet
from petsync.importer.columns import ColumnMap, resolve_columns
from petsync.importer.concurrency_limit import ConcurrencyLimit
from petsync.importer.config import ImportConfig
from petsync.importer.journal import Journal, RowRecord, RowState
from petsync.importer.outputs import (
    ACCEPTED_COLUMNS,
    REJECT_COLUMNS,
    UNCERTAIN_COLUMNS,
    AtomicCsv,
    output_paths,
    write_text_atomic,
)
from petsync.importer.spreadsheet import SheetRow, Spreadsheet, open_spreadsheet
from petsync.importer.validation import Validated, validate_row

if TYPE_CHECKING:
    from petsync.client.client import PetstoreClient

logger = logging.getLogger(__name__)


@dataclass
class ImportReport:
    """What an import did. ``stop`` holds the error that ended the run early, if any.

    Counts are over the whole file as the journal now stands, except ``created`` (this
    run) and ``already_created`` (earlier runs). ``pending`` rows were not sent (a stop,
    ``--max-errors``); ``would_send`` counts the valid rows of a dry run.
    """

    source: str
    dry_run: bool
    rows_read: int = 0
    skipped_blank: int = 0
    created: int = 0
    already_created: int = 0
    rejected_local: int = 0
    rejected_api: int = 0
    uncertain: int = 0
    pending: int = 0
    would_send: int = 0
    encoding: str | None = None
    encoding_notice: str | None = None
    delimiter: str | None = None
    sheet: str | None = None
    columns: dict[str, str] = field(default_factory=dict)
    normalisations: dict[str, int] = field(default_factory=dict)
    elapsed_seconds: float = 0.0
    requests: int = 0
    retries: int = 0
    journal_fsyncs: int = 0
    journal_fsync_seconds: float = 0.0
    concurrency_final: int | None = None
    concurrency_lowest: int | None = None
    files: dict[str, str] = field(default_factory=dict)
    stopped_reason: str | None = None
    stop: PetsyncError | None = None

    @property
    def rejected(self) -> int:
        """Rows rejected, locally or by the API."""
        return self.rejected_local + self.rejected_api

    @property
    def rows_per_second(self) -> float:
        return self.rows_read / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    @property
    def exit_code(self) -> ExitCode:
        """0 when every row was created (or would be, in a dry run); else 4, or the stop's."""
        if self.stop is not None:
            return self.stop.exit_code
        if self.rejected_local or self.rejected_api or self.uncertain or self.pending:
            return ExitCode.INCOMPLETE
        return ExitCode.OK

    def raise_for_stop(self) -> None:
        """Raise the error that stopped the run, if one did (library callers)."""
        if self.stop is not None:
            raise self.stop

    def raise_for_outcome(self) -> None:
        """Raise the stop's error, or :class:`IncompleteError` (exit 4) when rows are left.

        The output files are written by then; they say which rows and why.
        """
        self.raise_for_stop()
        if self.exit_code is not ExitCode.OK:
            raise IncompleteError(
                f"{self.source}: {self.rejected} rows rejected, {self.uncertain} uncertain, "
                f"{self.pending} pending"
            )

    def metric_counts(self) -> dict[str, int]:
        """The run's counts for the metrics file, by metric name without ``petsync_``."""
        return {
            "rows_created": self.created,
            "rows_rejected": self.rejected,
            "rows_uncertain": self.uncertain,
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "dry_run": self.dry_run,
            "rows_read": self.rows_read,
            "skipped_blank": self.skipped_blank,
            "created": self.created,
            "already_created": self.already_created,
            "rejected_local": self.rejected_local,
            "rejected_api": self.rejected_api,
            "uncertain": self.uncertain,
            "pending": self.pending,
            "would_send": self.would_send,
            "encoding": self.encoding,
            "encoding_notice": self.encoding_notice,
            "delimiter": self.delimiter,
            "sheet": self.sheet,
            "columns": self.columns,
            "normalisations": self.normalisations,
            "elapsed_seconds": round(self.elapsed_seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
            "requests": self.requests,
            "retries": self.retries,
            "journal_fsyncs": self.journal_fsyncs,
            "journal_fsync_seconds": round(self.journal_fsync_seconds, 3),
            "concurrency_final": self.concurrency_final,
            "concurrency_lowest": self.concurrency_lowest,
            "files": self.files,
            "stopped_reason": self.stopped_reason,
            "error": None if self.stop is None else redact(str(self.stop)),
            "exit_code": int(self.exit_code),
        }

    def write_json(self, path: Path) -> None:
        """Write :meth:`to_json` to ``path`` atomically."""
        write_text_atomic(path, json.dumps(self.to_json(), indent=2) + "\n")


def run_import(
    config: ImportConfig,
    client: PetstoreClient | None = None,
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
    report = ImportReport(source=str(config.path), dry_run=config.dry_run)
    paths = output_paths(config.path, config.out_dir)
    if config.journal_path is not None:
        paths["journal"] = config.journal_path
    if config.out_dir is not None:
        try:
            config.out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create --out-dir {config.out_dir}: {exc}") from exc

    with open_spreadsheet(config.path, config.read_options) as sheet:
        columns = resolve_columns(sheet.header, config.mappings, config.path)
        report.encoding = sheet.encoding_label
        report.encoding_notice = sheet.encoding_notice
        report.delimiter = sheet.delimiter_name
        report.sheet = sheet.sheet
        report.columns = columns.describe(sheet.header)
        sha256 = sheet.sha256
        settings = {
            "columns": report.columns,
            "encoding": report.encoding,
            "delimiter": report.delimiter,
            "sheet": report.sheet,
        }
        report.rows_read = _check_pass(sheet)
        report.skipped_blank = sheet.blank_rows

    journal: Journal | None = None
    if not config.dry_run:
        journal = Journal.open(
            paths["journal"], source=config.path, sha256=sha256, settings=settings
        )
    try:
        if journal is not None and client is not None:
            try:
                _send_pass(config, client, journal, columns, sha256, report, clock)
            except KeyboardInterrupt:
                # Ctrl-C: in-flight rows finished, the rest of their batches journaled unsent;
                # leave complete output files behind, then let the interrupt go on.
                journal.sync()
                _write_pass(config, journal, sha256, report, paths)
                raise
            journal.sync()
        _write_pass(config, journal, sha256, report, paths)
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


# -- pass 1: check ---------------------------------------------------------------------------


def _check_pass(sheet: Spreadsheet) -> int:
    """Read every row once (a malformed file raises InputError here); the row count."""
    return sum(1 for _ in sheet.rows())


# -- pass 2: send ----------------------------------------------------------------------------


class _Sender:
    """Shared state of the worker threads: the stop flag, the error budget, counters."""

    def __init__(
        self,
        config: ImportConfig,
        client: PetstoreClient,
        journal: Journal,
        clock: Callable[[], float],
    ):
        self.config = config
        self.client = client
        self.journal = journal
        self.clock = clock
        self.limit = ConcurrencyLimit(config.concurrency)
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.stop: PetsyncError | None = None
        self.stopped_reason: str | None = None
        self.errors = 0
        self.created = 0

    def halt(self, reason: str, error: PetsyncError | None = None) -> None:
        with self.lock:
            if not self.stopped.is_set():
                self.stop, self.stopped_reason = error, reason
                self.stopped.set()

    def count_rejection(self) -> None:
        with self.lock:
            self.errors += 1
            limit = self.config.max_errors
            reached = limit is not None and self.errors >= limit
        if reached:
            self.halt(f"--max-errors {limit} reached; the remaining rows are pending")

    def work(self, source: _RowSource) -> None:
        """One worker: under a permit, take a batch, journal it `sending`, POST its rows."""
        try:
            while not self.stopped.is_set():
                if not self.limit.acquire(self.stopped):
                    return
                batch: list[tuple[int, NewPet]] = []
                try:
                    # Fewer senders (a saturated server) take bigger batches: fewer syncs
                    # and hand-offs; the window bounds the rows a crash can leave uncertain.
                    batch = source.take(self.limit.permits)
                    if not batch or self.stopped.is_set():
                        return  # rows taken at a stop were not journaled: they stay pending
                    self.journal.mark_sending([number for number, _ in batch])
                    self.send_batch(batch)
                finally:
                    self.limit.release()
                    source.done(len(batch))
        except BaseException as exc:  # a bug must not leave the others waiting
            error = exc if isinstance(exc, PetsyncError) else PetsyncError(repr(exc))
            self.halt(f"unexpected error: {exc!r}", error)

    def send_batch(self, batch: list[tuple[int, NewPet]]) -> None:
        """POST a journaled batch, one row after another; rows a stop kept back are unsent."""
        started = 0
        try:
            for index, (row, pet) in enumerate(batch):
                if self.stopped.is_set():
                    return
                started = index + 1  # from here on the row may have left
                self.timed_send(row, pet)
        finally:
            for row, _ in batch[started:]:
                self.not_sent(row)

    def not_sent(self, row: int) -> None:
        """A row journaled ``sending`` that the stop kept from leaving: surely not created."""
        self.journal.record(RowRecord(row, RowState.UNSENT, message="not sent: the run stopped"))

    def timed_send(self, row: int, pet: NewPet) -> None:
        """Send (under a permit of the adaptive limit), telling the limit its round trip."""
        retries, started = self.client.retries, self.clock()
        answered = False
        try:
            answered = self.send(row, pet)
        finally:
            rtt = self.clock() - started if answered else None
            throttled = self.client.retries > retries  # a 429 (or refusal) was waited out
            self.limit.observe(rtt=rtt, throttled=throttled)

    def send(self, row: int, pet: NewPet) -> bool:
        """POST one row and journal its outcome; True when the API answered it."""
        # The worker journaled this row as `sending` (on disk) with its batch.
        try:
            created = self.client.create_pet(pet)
        except AuthenticationError as exc:
            # 401: refused before any work, so surely not created; nothing counts as rejected.
            self.journal.record(RowRecord(row, RowState.UNSENT, message=str(exc)))
            self.halt("the API refused the key (401)", exc)
        except OutcomeUnknownError as exc:
            self._uncertain(row, exc, None)
        except ApiError as exc:
            if 400 <= exc.http_status < 500 and exc.http_status != 429:
                self.journal.record(
                    RowRecord(
                        row,
                        RowState.REJECTED,
                        code=exc.code or f"http_{exc.http_status}",
                        message=exc.api_message or str(exc),
                        http_status=exc.http_status,
                    )
                )
                self.count_rejection()
                return True
            elif exc.http_status == 429:
                self._unsent(row, exc)
            else:  # a 5xx the client did not classify: it was sent, outcome unknown
                self._uncertain(row, exc, exc.http_status)
        except RetriesExhaustedError as exc:
            if isinstance(exc.last_error, OutcomeUnknownError):
                self._uncertain(row, exc.last_error, None)
            else:  # only surely-unsent failures are retried on POST
                self._unsent(row, exc)
        except TransportError as exc:  # refused before sending: not created
            self._unsent(row, exc)
        except ProtocolError as exc:  # a 2xx we cannot read: probably created
            self._uncertain(row, exc, None)
        except PetsyncError as exc:
            self._uncertain(row, exc, None)
            self.halt(str(exc), exc)
        else:
            self.journal.record(RowRecord(row, RowState.CREATED, id=created.id))
            with self.lock:
                self.created += 1
            return True
        return False

    def _uncertain(self, row: int, exc: PetsyncError, status: int | None) -> None:
        if status is None:
            status = _status_in(exc)
        self.journal.record(
            RowRecord(row, RowState.UNCERTAIN, message=str(exc), http_status=status)
        )
        logger.warning(
            "import_row_uncertain", extra={"fields": {"row": row, "http_status": status}}
        )

    def _unsent(self, row: int, exc: PetsyncError) -> None:
        self.journal.record(RowRecord(row, RowState.UNSENT, message=str(exc)))
        self.halt(f"stopped: {exc}; re-run the same command to resume", exc)


def _status_in(exc: PetsyncError) -> int | None:
    status = getattr(exc, "http_status", None)
    if isinstance(status, int):
        return status
    cause = exc.__cause__
    return _status_in(cause) if isinstance(cause, PetsyncError) else None


class _RowSource:
    """The send pass's rows, read and validated by the workers themselves, under one lock.

    Only rows to send are handed out; invalid rows count against ``--max-errors``. Rows
    handed out and not yet :meth:`done` stay within ``config.sending_window``. An exception
    while reading (or a Ctrl-C test double) is kept in ``error`` and re-raised by the main
    thread once the workers are done.
    """

    def __init__(
        self,
        sheet: Spreadsheet,
        columns: ColumnMap,
        sender: _Sender,
        states: dict[int, RowRecord],
    ) -> None:
        self.rows = iter(sheet.rows())
        self.columns = columns
        self.width = len(sheet.header)
        self.sender = sender
        self.states = states
        self.normalisations: Counter[str] = Counter()
        self.error: BaseException | None = None
        self.window = sender.config.sending_window
        self.outstanding = 0
        self.cond = threading.Condition(threading.Lock())

    def take(self, senders: int) -> list[tuple[int, NewPet]]:
        """The next rows to send: a share of the window for one of ``senders``, at least one.

        Waits while the window is full (other senders hold it and are sending); fewer rows at
        the end of the file, none at a stop.
        """
        batch: list[tuple[int, NewPet]] = []
        sender, resend = self.sender, self.sender.config.resend_uncertain
        with self.cond:
            while self.outstanding >= self.window:
                if sender.stopped.is_set():
                    return batch
                self.cond.wait(timeout=0.1)
            if self.error is not None:
                return batch
            count = max(1, min(self.window // max(1, senders), self.window - self.outstanding))
            try:
                while len(batch) < count and not sender.stopped.is_set():
                    row = next(self.rows, None)
                    if row is None:
                        break
                    result = validate_row(row.cells, self.columns, self.width)
                    if result.pet is None:
                        sender.count_rejection()
                        continue
                    if result.normalisations:
                        self.normalisations.update(n.value for n in result.normalisations)
                    if _should_send(self.states.get(row.number), resend):
                        batch.append((row.number, result.pet))
            except BaseException as exc:
                self.error = exc
                sender.halt("interrupted")
                return []  # nothing journaled yet: these rows stay pending
            self.outstanding += len(batch)
        return batch

    def done(self, rows: int) -> None:
        """A batch of ``rows`` rows was answered or journaled unsent: free its window share."""
        if rows:
            with self.cond:
                self.outstanding -= rows
                self.cond.notify()


def _send_pass(
    config: ImportConfig,
    client: PetstoreClient,
    journal: Journal,
    columns: ColumnMap,
    sha256: str,
    report: ImportReport,
    clock: Callable[[], float],
) -> None:
    sender = _Sender(config, client, journal, clock)
    with open_spreadsheet(config.path, config.read_options) as sheet:
        if sheet.sha256 != sha256:
            raise InputError(
                f"{config.path} changed while the import was running; re-run the same "
                "command once nobody is editing it"
            )
        source = _RowSource(sheet, columns, sender, journal.states)
        workers = [
            threading.Thread(
                target=sender.work, args=(source,), name=f"petsync-import-{i}", daemon=True
            )
            for i in range(config.concurrency)
        ]
        for worker in workers:
            worker.start()
        interrupted = _join(workers, sender)
    report.created = sender.created
    report.normalisations = dict(sorted(source.normalisations.items()))
    report.stop = sender.stop
    report.stopped_reason = sender.stopped_reason
    report.concurrency_final = sender.limit.permits
    report.concurrency_lowest = max(1, int(sender.limit.lowest))
    if source.error is not None:
        raise source.error
    if interrupted:
        raise KeyboardInterrupt


def _join(workers: list[threading.Thread], sender: _Sender) -> bool:
    """Wait for the workers to finish their POSTs, even through Ctrl-C; True if pressed."""
    interrupted = False
    for worker in workers:
        while worker.is_alive():
            try:
                worker.join(timeout=0.5)
            except KeyboardInterrupt:
                # Leaving now would abandon POSTs in flight with no outcome journaled;
                # each ends within the client's timeouts.
                interrupted = True
                sender.halt("interrupted")
    return interrupted


def _should_send(record: RowRecord | None, resend_uncertain: bool) -> bool:
    if record is None or record.state is RowState.UNSENT:
        return True
    if record.state in (RowState.UNCERTAIN, RowState.SENDING):
        return resend_uncertain
    return False  # created or rejected by the API: final


# -- pass 3: write ---------------------------------------------------------------------------


def _write_pass(
    config: ImportConfig,
    journal: Journal | None,
    sha256: str,
    report: ImportReport,
    paths: dict[str, Path],
) -> None:
    states = journal.states if journal is not None else {}
    with open_spreadsheet(config.path, config.read_options) as sheet:
        if sheet.sha256 != sha256:
            raise InputError(
                f"{config.path} changed while the import was running; re-run the same "
                "command once nobody is editing it"
            )
        columns = resolve_columns(sheet.header, config.mappings, config.path)
        width = len(sheet.header)
        carried_header = [sheet.header[i] for i in columns.carried]
        rejects = AtomicCsv(paths["rejects"], [*carried_header, *REJECT_COLUMNS])
        outputs = [rejects]
        accepted = uncertain = None
        if journal is not None:
            accepted = AtomicCsv(paths["accepted"], [*carried_header, *ACCEPTED_COLUMNS])
            uncertain = AtomicCsv(paths["uncertain"], [*carried_header, *UNCERTAIN_COLUMNS])
            outputs += [accepted, uncertain]
        try:
            created_total = 0
            normalisations: Counter[str] = Counter()
            for row in sheet.rows():
                carried = _carried(row, columns, width)
                record = states.get(row.number)
                # A row in the journal was valid when it was sent: no need to check it again.
                result = _VALID if record is not None else validate_row(row.cells, columns, width)
                if journal is None:
                    normalisations.update(n.value for n in result.normalisations)
                if result.errors:
                    report.rejected_local += 1
                    rejects.write(
                        [
                            *carried,
                            str(row.number),
                            "local",
                            ";".join(e.code for e in result.errors),
                            ";".join(e.field for e in result.errors if e.field),
                            "; ".join(e.message for e in result.errors),
                            "",
                        ]
                    )
                    continue
                state = record.state if record is not None else None
                if journal is None:
                    report.would_send += 1
                elif record is not None and state is RowState.CREATED and accepted is not None:
                    created_total += 1
                    accepted.write([*carried, str(row.number), str(record.id)])
                elif record is not None and state is RowState.REJECTED:
                    report.rejected_api += 1
                    rejects.write(
                        [
                            *carried,
                            str(row.number),
                            "api",
                            record.code or "",
                            record.field or "",
                            record.message or "",
                            "" if record.http_status is None else str(record.http_status),
                        ]
                    )
                elif state in (RowState.UNCERTAIN, RowState.SENDING) and uncertain is not None:
                    report.uncertain += 1
                    reason = (
                        record.message
                        if record is not None and record.message
                        else "the run stopped while this row was being sent (crash or kill); "
                        "the pet may or may not exist"
                    )
                    status = record.http_status if record is not None else None
                    uncertain.write(
                        [*carried, str(row.number), reason, "" if status is None else str(status)]
                    )
                else:
                    report.pending += 1
            for output in outputs:
                output.commit()
            if journal is None:  # a dry run: no send pass counted them
                report.normalisations = dict(sorted(normalisations.items()))
        except BaseException:
            for output in outputs:
                output.abort()
            raise
    report.already_created = max(0, created_total - report.created) if journal else 0
    report.files = {
        name: str(out.path)
        for name, out in zip(("rejects", "accepted", "uncertain"), outputs, strict=False)
    }
    if journal is not None:
        report.files["journal"] = str(journal.path)


_VALID = Validated(pet=None, errors=(), normalisations=())


def _carried(row: SheetRow, columns: ColumnMap, width: int) -> list[str]:
    cells = row.cells
    return [cells[i] if i < len(cells) else "" for i in columns.carried if i < width]
