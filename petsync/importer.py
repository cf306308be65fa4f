"""The import job: spreadsheet rows to POST /pets, with a journal so nothing is sent twice.

``run_import`` makes three streaming passes over the input:

1. **check**: read and validate every row, before anything is sent, so a malformed file
   stops with nothing created;
2. **send**: valid rows not yet done go to ``concurrency`` worker threads sharing one
   :class:`~petsync.client.PetstoreClient`; each row is journaled ``sending`` (durably)
   before its POST and its outcome after;
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
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from petsync.apikey import redact
from petsync.columns import ColumnMap, resolve_columns
from petsync.concurrency_limit import ConcurrencyLimit
from petsync.errors import (
    ApiError,
    AuthenticationError,
    ConfigError,
    ExitCode,
    InputError,
    OutcomeUnknownError,
    PetsyncError,
    ProtocolError,
    RetriesExhaustedError,
    TransportError,
)
from petsync.import_files import (
    ACCEPTED_COLUMNS,
    REJECT_COLUMNS,
    UNCERTAIN_COLUMNS,
    AtomicCsv,
    output_paths,
    write_text_atomic,
)
from petsync.journal import Journal, RowRecord, RowState
from petsync.models import NewPet
from petsync.spreadsheet import ReadOptions, SheetRow, Spreadsheet, open_spreadsheet
from petsync.validation import Validated, validate_row

if TYPE_CHECKING:
    from petsync.client import PetstoreClient

logger = logging.getLogger(__name__)

DEFAULT_CONCURRENCY = 8  # a real API is far away: each POST waits a round trip
MAX_CONCURRENCY = 64
_STOP = None  # sentinel that ends a worker


@dataclass(frozen=True)
class ImportConfig:
    """What to import and how. ``None`` for sheet/encoding/delimiter means detect.

    >>> ImportConfig(path=Path("pets.csv"), dry_run=True).concurrency
    8
    """

    path: Path
    sheet: str | None = None
    encoding: str | None = None
    delimiter: str | None = None
    mappings: tuple[str, ...] = ()
    dry_run: bool = False
    concurrency: int = DEFAULT_CONCURRENCY
    max_errors: int | None = None
    out_dir: Path | None = None
    journal_path: Path | None = None
    resend_uncertain: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise ConfigError(f"--concurrency must be between 1 and {MAX_CONCURRENCY}")
        if self.max_errors is not None and self.max_errors < 1:
            raise ConfigError("--max-errors must be at least 1")

    @property
    def send_batch(self) -> int:
        """Rows journaled `sending` with one sync: half the concurrency, at least one."""
        return max(1, self.concurrency // 2)

    @property
    def read_options(self) -> ReadOptions:
        return ReadOptions(sheet=self.sheet, encoding=self.encoding, delimiter=self.delimiter)


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

    Input problems raise :class:`~petsync.errors.InputError` before anything is sent. A
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
                # Ctrl-C: in-flight rows finished and queued ones were journaled unsent;
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
        # Rows journaled `sending` but not yet taken by a worker: at most `concurrency`.
        self.slots = threading.BoundedSemaphore(config.concurrency)

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

    def work(self, jobs: queue.Queue[tuple[int, NewPet] | None]) -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            self.slots.release()  # taken: the feeder may journal the next row
            try:
                if self.stopped.is_set() or not self.limit.acquire(self.stopped):
                    self.not_sent(job[0])
                else:
                    self.timed_send(*job)
            except BaseException as exc:  # a bug must not leave the others waiting
                error = exc if isinstance(exc, PetsyncError) else PetsyncError(repr(exc))
                self.halt(f"unexpected error: {exc!r}", error)

    def not_sent(self, row: int) -> None:
        """A row journaled ``sending`` that the stop kept from leaving: surely not created."""
        self.journal.record(RowRecord(row, RowState.UNSENT, message="not sent: the run stopped"))

    def timed_send(self, row: int, pet: NewPet) -> None:
        """Send under a permit of the adaptive limit, telling it the round trip."""
        retries, started = self.client.retries, self.clock()
        answered = False
        try:
            answered = self.send(row, pet)
        finally:
            rtt = self.clock() - started if answered else None
            throttled = self.client.retries > retries  # a 429 (or refusal) was waited out
            self.limit.release(rtt=rtt, throttled=throttled)

    def send(self, row: int, pet: NewPet) -> bool:
        """POST one row and journal its outcome; True when the API answered it."""
        # The feeder journaled this row as `sending` (on disk) before queueing it.
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
    jobs: queue.Queue[tuple[int, NewPet] | None] = queue.Queue()
    workers = [
        threading.Thread(target=sender.work, args=(jobs,), name=f"petsync-import-{i}", daemon=True)
        for i in range(config.concurrency)
    ]
    for worker in workers:
        worker.start()
    batch: list[tuple[int, NewPet]] = []
    normalisations: Counter[str] = Counter()
    try:
        with open_spreadsheet(config.path, config.read_options) as sheet:
            if sheet.sha256 != sha256:
                raise InputError(
                    f"{config.path} changed while the import was running; re-run the same "
                    "command once nobody is editing it"
                )
            width = len(sheet.header)
            for row in sheet.rows():
                if sender.stopped.is_set():
                    break
                result = validate_row(row.cells, columns, width)
                if result.pet is None:
                    sender.count_rejection()
                    continue
                normalisations.update(n.value for n in result.normalisations)
                if _should_send(journal.states.get(row.number), config.resend_uncertain):
                    batch.append((row.number, result.pet))
                    if len(batch) >= config.send_batch:
                        _dispatch(batch, sender, jobs)
                        batch = []
            _dispatch(batch, sender, jobs)
    except BaseException:
        sender.halt("interrupted")
        raise
    finally:
        if sender.stopped.is_set():
            _drain(jobs, sender)  # queued rows stay pending; on a normal end workers finish them
        for _ in workers:
            jobs.put(_STOP)
        interrupted = _join(workers, sender)
    report.created = sender.created
    report.normalisations = dict(sorted(normalisations.items()))
    report.stop = sender.stop
    report.stopped_reason = sender.stopped_reason
    report.concurrency_final = sender.limit.permits
    report.concurrency_lowest = max(1, int(sender.limit.lowest))
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


def _dispatch(batch: list[tuple[int, NewPet]], sender: _Sender, jobs: queue.Queue[Any]) -> None:
    """Journal a batch as `sending` with one sync, then hand it to the workers.

    Slots bound the rows journaled but not yet taken by a worker, so a crash leaves at most
    ``2 * concurrency`` rows uncertain (those queued and those in flight).
    """
    taken = 0
    try:
        for _ in batch:
            while not sender.slots.acquire(timeout=0.1):
                if sender.stopped.is_set():
                    return
            taken += 1
        if sender.stopped.is_set() or not batch:
            return
        queued = 0
        try:
            sender.journal.mark_sending([number for number, _ in batch])
            for job in batch:
                jobs.put(job)
                queued += 1
                taken -= 1  # the worker that takes it releases its slot
        finally:
            for number, _ in batch[queued:]:  # interrupted: journaled, never sent
                sender.not_sent(number)
    finally:
        for _ in range(taken):
            sender.slots.release()


def _should_send(record: RowRecord | None, resend_uncertain: bool) -> bool:
    if record is None or record.state is RowState.UNSENT:
        return True
    if record.state in (RowState.UNCERTAIN, RowState.SENDING):
        return resend_uncertain
    return False  # created or rejected by the API: final


def _drain(jobs: queue.Queue[tuple[int, NewPet] | None], sender: _Sender) -> None:
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            return
        if job is not None:
            sender.not_sent(job[0])
            sender.slots.release()


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
