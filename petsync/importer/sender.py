"""The send stage: worker threads POST the valid rows not yet done, each journaled first.

``concurrency`` worker threads share one client (any
:class:`~petsync.client.api.PetCreator`); an adaptive
:class:`~petsync.importer.concurrency_limit.ConcurrencyLimit` decides how many of them send
at once. A worker with a permit takes a batch of valid rows not yet done from the row
checked rows (taking them itself, under one lock: no feeder thread, no hand-off per
row), journals the batch ``sending`` (durably, one sync) and POSTs its rows one after
another, journaling each outcome. Batches share a window of rows journaled but not yet
answered (what a crash can leave uncertain), so fewer senders take bigger batches.

Outcomes per row: created (201); rejected by the API (a 4xx other than 401/429: final);
uncertain (sent, then a timeout, a dropped connection or a 5xx: the pet may exist, so it
is never re-sent unless ``resend_uncertain``); unsent (surely not created: a 401, or
429/refused connections beyond the client's retries): the run stops and a re-run sends it.

A redirect (3xx) answering a POST leaves its row uncertain (a server may create, then
redirect to the new pet) and stops the run at once: every other row would meet it, and the
base URL needs fixing. A 201 whose echoed pet differs from the row sent (another name or
categoryId, another status when one was sent) is created all the same, and its row is
named in a notice (``SendResult.mismatched``) to check.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from petsync.client.api import PetCreator
from petsync.core.errors import (
    ApiError,
    AuthenticationError,
    OutcomeUnknownError,
    PetsyncError,
    ProtocolError,
    RetriesExhaustedError,
    TransportError,
)
from petsync.core.models import NewPet, Pet
from petsync.core.settings_table import MAX_ERRORS, SETTLE
from petsync.core.stop import StopRequest
from petsync.core.text import shown_text
from petsync.core.wording import Said
from petsync.importer.checked_rows import CheckedRow, content_of
from petsync.importer.concurrency_limit import ConcurrencyLimit
from petsync.importer.config import ImportConfig
from petsync.importer.journal import Journal
from petsync.importer.precheck import CheckedInput
from petsync.importer.provenance import KnownRows, Ledger
from petsync.importer.row_states import RowRecord, RowState

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SendResult:
    """How the send stage went: pets created, normalisations used, why it stopped early.

    ``concurrency_final`` and ``concurrency_lowest`` are where the adaptive limit ended
    and the fewest senders it allowed.
    """

    created: int
    normalisations: dict[str, int]
    stop: PetsyncError | None
    stopped_reason: Said | None
    concurrency_final: int
    concurrency_lowest: int
    mismatched: tuple[int, ...] = ()  # rows created, whose echoed pet differs from the row


def send_rows(
    config: ImportConfig,
    client: PetCreator,
    journal: Journal,
    checked: CheckedInput,
    clock: Callable[[], float],
    *,
    stop: StopRequest | None = None,
    progress: SendProgress | None = None,
    ledger: Ledger | None = None,
) -> SendResult:
    """Send the rows of ``checked`` that ``journal`` does not show as done.

    ``ledger`` holds the rows other files of the same origin created or may have (see
    :mod:`petsync.importer.provenance`): they are not sent. Rows repeating an earlier row
    of the sheet are not sent unless the check was told to send them.

    Waits for every worker, also through Ctrl-C (a POST in flight gets its outcome
    journaled), then raises :class:`KeyboardInterrupt` if it was pressed, or the error a
    worker met while taking the checked rows. When ``stop`` is requested no new row is taken;
    requests already sent get ``stop.grace_seconds`` to finish, and rows still unanswered
    then stay ``sending`` in the journal (uncertain); the result's ``stop`` is then a
    :class:`~petsync.core.errors.StoppedError`.
    """
    via = checked.path.name if checked.fed_back else None
    sender = _Sender(config, client, journal, clock, progress, via=via)
    source = _RowSource(checked.rows, sender, KnownRows(journal.states, ledger))
    workers = [
        threading.Thread(
            target=sender.work, args=(source,), name=f"petsync-import-{i}", daemon=True
        )
        for i in range(config.concurrency)
    ]
    for worker in workers:
        worker.start()
    interrupted = _join(workers, sender, stop, checked.path)
    if source.error is not None:
        raise source.error
    if interrupted:
        raise KeyboardInterrupt
    return SendResult(
        created=sender.created,
        normalisations=dict(sorted(source.normalisations.items())),
        stop=sender.stop,
        stopped_reason=sender.stopped_reason,
        concurrency_final=sender.limit.permits,
        concurrency_lowest=max(1, int(sender.limit.lowest)),
        mismatched=tuple(sorted(sender.mismatched)),
    )


class _Sender:
    """Shared state of the worker threads: the stop flag, the error budget, counters."""

    def __init__(
        self,
        config: ImportConfig,
        client: PetCreator,
        journal: Journal,
        clock: Callable[[], float],
        progress: SendProgress | None = None,
        *,
        via: str | None = None,
    ):
        self.via = via  # a fix file's name: its records say so, with the pet as sent
        self.config = config
        self.client = client
        self.journal = journal
        self.clock = clock
        self.progress = progress
        self.limit = ConcurrencyLimit(config.concurrency)
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.stop: PetsyncError | None = None
        self.stopped_reason: Said | None = None
        self.errors = 0
        self.created = 0
        self.mismatched: list[int] = []

    def halt(self, reason: Said, error: PetsyncError | None = None) -> None:
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
            self.halt(MAX_ERRORS.given(limit) + " reached; the remaining rows are pending")

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
                if self.progress is not None:
                    self.progress.row_sent()
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
            if 300 <= exc.http_status < 400:
                # Maybe created (then redirected to the new pet); every next row would meet
                # the same redirect: stop after the first.
                self._uncertain(row, exc, exc.http_status)
                self.halt(
                    "stopped: "
                    + exc.words
                    + "; then import the same file with "
                    + SETTLE.given(True)
                    + " to decide the uncertain row",
                    exc,
                )
                return True
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
                self._tell("rejected")
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
            self.halt(exc.words, exc)
        else:
            pet_sent = content_of(pet) if self.via is not None else None
            differs = _echo_differs(pet, created)
            self.journal.record(
                RowRecord(
                    row,
                    RowState.CREATED,
                    id=created.id,
                    via=self.via,
                    pet=pet_sent,
                    message=differs,
                )
            )
            with self.lock:
                self.created += 1
                if differs is not None:
                    self.mismatched.append(row)
            if differs is not None:
                logger.warning(
                    "import_row_echo_differs",
                    extra={"fields": {"row": row, "id": created.id, "differs": differs}},
                )
            self._tell("created")
            return True
        return False

    def _tell(self, outcome: str) -> None:
        if self.progress is not None:
            self.progress.row_done(outcome)

    def _uncertain(self, row: int, exc: PetsyncError, status: int | None) -> None:
        self._tell("uncertain")
        if status is None:
            status = _status_in(exc)
        self.journal.record(
            RowRecord(row, RowState.UNCERTAIN, message=str(exc), http_status=status, via=self.via)
        )
        logger.warning(
            "import_row_uncertain", extra={"fields": {"row": row, "http_status": status}}
        )

    def _unsent(self, row: int, exc: PetsyncError) -> None:
        self.journal.record(RowRecord(row, RowState.UNSENT, message=str(exc)))
        self.halt("stopped: " + exc.words + "; re-run the same command to resume", exc)


def _echo_differs(sent: NewPet, created: Pet) -> str | None:
    """What the 201's pet says otherwise than the row sent, or None when it matches.

    A status the row left blank may come back filled (the interface does not say which).
    """
    found = []
    if created.name != sent.name:
        found.append(f"name '{shown_text(created.name, 80)}' for '{shown_text(sent.name, 80)}'")
    if created.categoryId != sent.categoryId:
        found.append(f"categoryId {created.categoryId} for {sent.categoryId}")
    if sent.status is not None and created.status != sent.status.value:
        shown = "none" if created.status is None else f"'{shown_text(created.status, 40)}'"
        found.append(f"status {shown} for '{sent.status.value}'")
    if not found:
        return None
    return f"created as pet {created.id}, but the API answered " + ", ".join(found)


def _status_in(exc: PetsyncError) -> int | None:
    status = getattr(exc, "http_status", None)
    if isinstance(status, int):
        return status
    cause = exc.__cause__
    return _status_in(cause) if isinstance(cause, PetsyncError) else None


class _RowSource:
    """The send stage's rows, as the check left them, taken by the workers under one lock.

    Only rows to send are handed out; invalid rows count against ``--max-errors``. Rows
    handed out and not yet :meth:`done` stay within ``config.sending_window``. An exception
    while reading (or a Ctrl-C test double) is kept in ``error`` and re-raised by the main
    thread once the workers are done.
    """

    def __init__(self, rows: Iterable[CheckedRow], sender: _Sender, known: KnownRows) -> None:
        self.rows = iter(rows)
        self.sender = sender
        self.known = known
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
                    pet = row.pet
                    if sender.progress is not None:
                        sender.progress.row_read(valid=pet is not None)
                    if pet is None:
                        if not row.whole and self._done(row.number):
                            continue  # fixed and created through a fix file: not a reject
                        sender.count_rejection()
                        continue
                    if row.normalisations:
                        self.normalisations.update(row.normalisations)
                    if row.repeat_of is not None:
                        continue  # a repeat of an earlier row: sent once, with that row
                    if _should_send(self.known.get(row.number), resend):
                        batch.append((row.number, pet))
            except BaseException as exc:
                self.error = exc
                sender.halt("interrupted")
                return []  # nothing journaled yet: these rows stay pending
            self.outstanding += len(batch)
        return batch

    def _done(self, number: int) -> bool:
        record = self.known.get(number)
        return record is not None and record.state in _MAY_EXIST

    def done(self, rows: int) -> None:
        """A batch of ``rows`` rows was answered or journaled unsent: free its window share."""
        if rows:
            with self.cond:
                self.outstanding -= rows
                self.cond.notify()


# How often the main thread looks at the stop request while the workers send: the wait has
# a timeout so that signal handlers (which run on the main thread) run promptly.
POLL_SECONDS = 0.05


def _join(
    workers: list[threading.Thread],
    sender: _Sender,
    stop: StopRequest | None,
    path: Path,
) -> bool:
    """Wait for the workers to finish their POSTs, even through Ctrl-C; True if pressed.

    A stop request halts the workers (no new row) and gives the POSTs in flight
    ``stop.grace_seconds``; past that the workers are left behind (daemon threads) and
    their rows stay ``sending`` in the journal.
    """
    interrupted = False
    deadline: float | None = None
    for worker in workers:
        while worker.is_alive():
            if stop is not None and stop.requested and deadline is None:
                sender.halt(
                    f"stopped by {stop.description}; requests already sent were given up to "
                    f"{stop.grace_seconds:g} s to finish; re-run the same command to resume",
                    stop.error(
                        f"the import of {path} was stopped by {stop.description}; the "
                        "outputs are written; re-run the same command to resume"
                    ),
                )
                deadline = time.monotonic() + stop.grace_seconds
            if deadline is not None and time.monotonic() >= deadline:
                logger.warning(
                    "import_grace_expired",
                    extra={"fields": {"workers_still_sending": sum(w.is_alive() for w in workers)}},
                )
                return interrupted
            try:
                worker.join(timeout=POLL_SECONDS)
            except KeyboardInterrupt:
                # Leaving now would abandon POSTs in flight with no outcome journaled;
                # each ends within the client's timeouts.
                interrupted = True
                sender.halt("interrupted")
    return interrupted


class SendProgress(Protocol):
    """Receives the send stage's events from worker threads (implementations lock)."""

    def row_read(self, *, valid: bool) -> None: ...

    def row_sent(self) -> None: ...

    def row_done(self, outcome: str) -> None: ...


_MAY_EXIST = (RowState.CREATED, RowState.SENDING, RowState.UNCERTAIN)


def _should_send(record: RowRecord | None, resend_uncertain: bool) -> bool:
    if record is None or record.state is RowState.UNSENT:
        return True
    if record.state in (RowState.UNCERTAIN, RowState.SENDING):
        return resend_uncertain
    return False  # created or rejected by the API: final
