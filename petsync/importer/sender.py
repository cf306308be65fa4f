"""The send stage: one thread keeps the valid rows not yet done in flight, each journaled first.

The sending thread drives the client's :meth:`~petsync.client.api.PetCreator.creations`:
many POSTs in flight at once from this one thread (libcurl's multi interface), as many as an
adaptive :class:`~petsync.importer.concurrency_limit.ConcurrencyLimit` allows (at most
``concurrency``). It takes rows from the checked rows in batches, journals each batch
``sending`` (durably, one sync) before any of its rows leaves, starts them as requests in
flight end, and journals the outcomes of the requests that end together in one write.
Rows journaled but not yet answered (what a crash can leave uncertain) stay within the
sending window.

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
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from petsync.client.api import PetCreations, PetCreator
from petsync.client.creations import Creation
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

    ``concurrency_final`` and ``concurrency_lowest`` are where the limit on POSTs in flight
    ended and the fewest it allowed.
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
    worker = threading.Thread(
        target=sender.work, args=(source,), name="petsync-import", daemon=True
    )
    worker.start()
    interrupted = _join(worker, sender, stop, checked.path)
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
    """The sending thread's state: the stop flag (also set by the main thread), the error
    budget, the counters, and the outcome lines not yet written."""

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
        self.records: list[RowRecord] = []  # outcomes to journal, in one write
        # Batches journaled `sending`, their sync asked of the journal: (mark, rows), in order.
        self.syncing: deque[tuple[int, list[tuple[int, NewPet]]]] = deque()

    def halt(self, reason: Said, error: PetsyncError | None = None) -> None:
        with self.lock:
            if not self.stopped.is_set():
                self.stop, self.stopped_reason = error, reason
                self.stopped.set()

    def count_rejection(self) -> None:
        self.errors += 1
        limit = self.config.max_errors
        if limit is not None and self.errors >= limit:
            self.halt(MAX_ERRORS.given(limit) + " reached; the remaining rows are pending")

    def work(self, source: _RowSource) -> None:
        """The sending thread: rows journaled `sending`, then in flight, until none is left.

        Rows journaled and not started when the run stops are journaled unsent.
        """
        ready: deque[tuple[int, NewPet]] = deque()  # journaled `sending` (durably), not started
        try:
            with self.client.creations() as creations:
                try:
                    self.send_all(source, creations, ready)
                finally:
                    while self.syncing:
                        ready.extend(self.syncing.popleft()[1])
                    self.records.extend(_not_sent(row) for row, _ in ready)
                    ready.clear()
                    self.flush()
        except BaseException as exc:  # a bug must not leave the main thread waiting
            error = exc if isinstance(exc, PetsyncError) else PetsyncError(repr(exc))
            self.halt(f"unexpected error: {exc!r}", error)

    def send_all(
        self, source: _RowSource, creations: PetCreations, ready: deque[tuple[int, NewPet]]
    ) -> None:
        """Keep the limit's number of POSTs in flight, each row journaled first, until the
        rows run out or the run stops; then wait for those in flight.

        ``ready`` holds rows journaled ``sending`` on disk, not yet started. When they fall
        to the requests allowed in flight, the rows the window has room for are journaled as
        the next batch, synced by the journal's sync thread while the rows before it are in
        flight (``self.syncing``); a batch joins ``ready`` once durable. A slow disk thus
        holds several batches in one sync, and rows journaled and not yet answered stay
        within the sending window.
        """
        limit, journal, stopped, syncing = self.limit, self.journal, self.stopped, self.syncing
        in_flight: dict[int, NewPet] = {}  # started, not yet ended
        window = self.config.sending_window
        while True:
            if not stopped.is_set():
                while syncing and journal.durable(syncing[0][0]):
                    ready.extend(syncing.popleft()[1])
                permits = limit.permits
                if len(ready) <= permits:
                    waiting = sum(len(rows) for _, rows in syncing)
                    room = window - len(ready) - waiting - len(in_flight)
                    batch = source.take(room) if room >= min(permits, window - permits) else []
                    if batch and not stopped.is_set():
                        mark = journal.mark_sending([row for row, _ in batch], wait=False)
                        syncing.append((mark, batch))
                while ready and len(in_flight) < permits and not stopped.is_set():
                    row, pet = ready.popleft()
                    if self.progress is not None:
                        self.progress.row_sent()
                    creations.start(row, pet)
                    in_flight[row] = pet
            if not in_flight:
                if not syncing or stopped.is_set():
                    return
                journal.wait_durable(syncing[0][0])  # nothing else to do meanwhile
                continue
            ended = creations.wait(POLL_SECONDS)
            for creation in ended:
                pet = in_flight.pop(creation.key)
                answered = self.ended(creation, pet)
                limit.observe(answered=answered, throttled=creation.retried)
            self.flush()

    def flush(self) -> None:
        """Journal the outcomes gathered since the last flush, in one write."""
        if self.records:
            records, self.records = self.records, []
            self.journal.record(*records)

    def ended(self, creation: Creation, pet: NewPet) -> bool:
        """Journal one POST's outcome; True when the API answered it."""
        # The row was journaled `sending` (on disk) before it was started.
        row = creation.key
        try:
            if creation.error is not None:
                raise creation.error
            created = creation.pet
            assert created is not None
        except AuthenticationError as exc:
            # 401: refused before any work, so surely not created; nothing counts as rejected.
            self.records.append(RowRecord(row, RowState.UNSENT, message=str(exc)))
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
                self.records.append(
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
            self.records.append(
                RowRecord(
                    row,
                    RowState.CREATED,
                    id=created.id,
                    via=self.via,
                    pet=pet_sent,
                    message=differs,
                )
            )
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
        self.records.append(
            RowRecord(row, RowState.UNCERTAIN, message=str(exc), http_status=status, via=self.via)
        )
        logger.warning(
            "import_row_uncertain", extra={"fields": {"row": row, "http_status": status}}
        )

    def _unsent(self, row: int, exc: PetsyncError) -> None:
        self.records.append(RowRecord(row, RowState.UNSENT, message=str(exc)))
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
    """The send stage's rows, as the check left them, taken by the sending thread.

    Only rows to send are handed out; invalid rows count against ``--max-errors``. An
    exception while reading (or a Ctrl-C test double) is kept in ``error`` and re-raised by
    the main thread once the sending thread is done.
    """

    def __init__(self, rows: Iterable[CheckedRow], sender: _Sender, known: KnownRows) -> None:
        self.rows = iter(rows)
        self.sender = sender
        self.known = known
        self.normalisations: Counter[str] = Counter()
        self.error: BaseException | None = None

    def take(self, count: int) -> list[tuple[int, NewPet]]:
        """The next rows to send, at most ``count``: fewer at the end of the file, none at a
        stop."""
        batch: list[tuple[int, NewPet]] = []
        sender, resend = self.sender, self.sender.config.resend_uncertain
        progress = sender.progress
        if self.error is not None:
            return batch
        try:
            while len(batch) < count and not sender.stopped.is_set():
                row = next(self.rows, None)
                if row is None:
                    break
                pet = row.pet
                if progress is not None:
                    progress.row_read(valid=pet is not None)
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
        return batch

    def _done(self, number: int) -> bool:
        record = self.known.get(number)
        return record is not None and record.state in _MAY_EXIST


# How often the main thread looks at the stop request while the sending thread sends (the
# wait has a timeout so that signal handlers, which run on the main thread, run promptly),
# and the sending thread at its own stop flag while it waits for answers.
POLL_SECONDS = 0.05


def _join(worker: threading.Thread, sender: _Sender, stop: StopRequest | None, path: Path) -> bool:
    """Wait for the sending thread to finish its POSTs, even through Ctrl-C; True if pressed.

    A stop request halts it (no new row) and gives the POSTs in flight
    ``stop.grace_seconds``; past that it is left behind (a daemon thread) and the rows it
    has in flight stay ``sending`` in the journal.
    """
    interrupted = False
    deadline: float | None = None
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
                extra={"fields": {"workers_still_sending": int(worker.is_alive())}},
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


def _not_sent(row: int) -> RowRecord:
    """A row journaled ``sending`` that the stop kept from leaving: surely not created."""
    return RowRecord(row, RowState.UNSENT, message="not sent: the run stopped")


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
