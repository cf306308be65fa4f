"""The import journal: each row's state, durable before its POST, so a re-run never duplicates.

The journal is an append-only file of JSON lines. Line 1 says which input it belongs to
(the sha256 of the file's bytes and the reading options); every other line is one state
change of one row, keyed by its row number::

    {"petsync_journal": 1, "source": "pets.csv", "sha256": "9f...", "settings": {...}}
    {"row": 2, "state": "sending"}
    {"row": 2, "state": "created", "id": 1001}
    {"row": 3, "state": "sending"}
    {"row": 3, "state": "rejected", "code": "invalid_category", ...}

Before the first POST, one ``{"baseline": {...}}`` line records the pets that already had
the file's contents (see :mod:`petsync.importer.baseline`); settling compares against it.
The journal of an input lives at ``OUT/.petsync/journals/<sha256>.jsonl``: it belongs to the
file's content, not its name (:func:`petsync.importer.output_paths.journal_path`).

The last line for a row wins. ``sending`` is written and synced to disk *before* the POST
leaves: a row whose last state is ``sending`` may or may not have been created (the
process died mid-request) and counts as uncertain, so it is never re-sent on its own.
``sending`` lines are written in batches (one write, one sync for several rows about to be
sent); concurrent callers share a sync (group commit). A batch can be synced by the
journal's own sync thread while its writer goes on (:meth:`Journal.mark_sending` with
``wait=False``, then :meth:`Journal.durable`): its rows may leave only once it is durable.
Outcome lines (``created``, ``rejected``, ``uncertain``, ``unsent``) are written at once,
so a killed process loses none, and synced with the next batch or at close: losing one in a
power cut only turns a known outcome into an uncertain one, never into a duplicate.

A torn last line (a crash mid-write) is dropped on open. An exclusive lock keeps two runs
off one journal.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from petsync.core.errors import InputError, PetsyncError
from petsync.core.files import fsync_dir, open_locked
from petsync.core.reading import open_regular
from petsync.core.settings_table import DELIMITER, ENCODING, JOURNAL, MAP, SHEET
from petsync.core.wording import Placeholder
from petsync.importer.baseline import Baseline
from petsync.importer.row_states import RowRecord, RowState, RowStates

logger = logging.getLogger(__name__)

JOURNAL_VERSION = 1


class Journal:
    """An open journal. Thread-safe: workers call :meth:`mark_sending` and :meth:`record`.

    ``states`` maps row number to the latest record, loaded from disk and kept current; it
    lives in a working folder beside the journal (:class:`RowStates`), removed on close.
    ``fsyncs`` and ``fsync_seconds`` measure what durability costs.
    """

    def __init__(
        self,
        path: Path,
        fd: int,
        states: RowStates,
        resumed: bool,
        baseline: Baseline | None = None,
    ):
        self.path = path
        self.states = states
        self.resumed = resumed
        self.baseline = baseline
        self.fsyncs = 0
        self.fsync_seconds = 0.0
        self._fd = fd
        self._cond = threading.Condition(threading.Lock())
        self._written = 0
        self._synced = 0
        self._syncing = False
        self._wanted = 0  # what the sync thread is asked to make durable
        self._syncer: threading.Thread | None = None
        self._sync_error: PetsyncError | None = None

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        source: Path,
        sha256: str,
        settings: Mapping[str, Any],
        outputs: Path | None = None,
    ) -> Journal:
        """Open (or create) the journal of ``source``; refuse one made for other content.

        ``outputs`` (the output folder of the run that creates it) is recorded, so that in
        a journal home shared by many folders an earlier file of the same name is only
        that folder's (:func:`unfinished_journals`).
        """
        fd = open_locked(
            path,
            f"another petsync import is using journal {path}; wait for it to finish "
            "(two runs on one file could send a row twice)",
        )
        try:
            size = os.fstat(fd).st_size
            if _blank(fd, size):
                header = {
                    "petsync_journal": JOURNAL_VERSION,
                    "source": source.name,
                    "sha256": sha256,
                    "settings": dict(settings),
                }
                if outputs is not None:
                    header["outputs"] = str(outputs.absolute())
                os.ftruncate(fd, 0)
                os.write(fd, (json.dumps(header) + "\n").encode())
                os.fsync(fd)
                fsync_dir(path.parent)  # the new file's name survives a power cut
                return cls(path, fd, RowStates(_states_dir(path)), resumed=False)
            states = RowStates(_states_dir(path))
            try:
                baseline, good_length = _parse(_lines(fd), path, source, sha256, settings, states)
            except BaseException:
                states.close()
                raise
            if good_length < size:
                # A crash tore the last line; cut it so the next line starts clean.
                logger.warning("journal_torn_line_dropped", extra={"fields": {"path": str(path)}})
                os.ftruncate(fd, good_length)
                os.fsync(fd)
            elif good_length > size:
                # The last line is whole but lost its newline: end it before appending.
                os.write(fd, b"\n")
                os.fsync(fd)
            return cls(path, fd, states, resumed=True, baseline=baseline)
        except BaseException:
            os.close(fd)
            raise

    def mark_sending(self, rows: Sequence[int], *, wait: bool = True) -> int:
        """Record that ``rows`` are about to be POSTed (one write); returns the mark
        :meth:`durable` takes.

        Returns once the lines are on disk (one sync for the batch; concurrent callers
        share syncs), or with ``wait=False`` at once, the sync left to the journal's sync
        thread: the rows must not leave before :meth:`durable` says so.
        """
        with self._cond:
            mark = self._write([RowRecord(row, RowState.SENDING) for row in rows])
            if not wait:
                self._wanted = mark
                if self._syncer is None:
                    self._syncer = threading.Thread(
                        target=self._sync_behind, name="petsync-journal-sync", daemon=True
                    )
                    self._syncer.start()
                self._cond.notify_all()
                return mark
        self.wait_durable(mark)
        return mark

    def durable(self, mark: int) -> bool:
        """Whether the lines written up to ``mark`` are on disk; raises what the sync
        thread met."""
        if self._sync_error is not None:
            raise self._sync_error
        return self._synced >= mark

    def wait_durable(self, mark: int) -> None:
        """Return once the lines written up to ``mark`` are on disk (syncing if no one is)."""
        with self._cond:
            while self._synced < mark:
                if self._sync_error is not None:
                    raise self._sync_error
                if self._syncing:
                    self._cond.wait()
                    continue
                self._sync_locked()

    def _sync_behind(self) -> None:
        """The sync thread: makes the journal durable up to what it was asked, until close."""
        with self._cond:
            while self._fd >= 0:
                if self._wanted <= self._synced or self._syncing:
                    self._cond.wait()
                    continue
                try:
                    self._sync_locked()
                except PetsyncError as exc:
                    self._sync_error = exc
                    self._cond.notify_all()
                    return

    def record_baseline(self, baseline: Baseline) -> None:
        """Record the catalogue before the first POST (one line), synced before returning."""
        self._record_line({"baseline": baseline.to_json()})
        self.baseline = baseline

    def record_summary(self, *, pending: int, uncertain: int) -> None:
        """Record how a run left the file (one line): what a later file of its name checks."""
        self._record_line({"summary": {"pending": pending, "uncertain": uncertain}})

    def _record_line(self, obj: Mapping[str, Any]) -> None:
        line = json.dumps(obj, ensure_ascii=False) + "\n"
        with self._cond:
            if self._fd < 0:
                raise PetsyncError(f"journal {self.path} is closed; nothing more is recorded")
            try:
                os.write(self._fd, line.encode())
            except OSError as exc:
                raise PetsyncError(f"cannot write journal {self.path}: {exc.strerror}") from exc
            self._written += 1
        self.sync()

    def record(self, *records: RowRecord) -> None:
        """Record outcomes (one write); on disk at the next :meth:`mark_sending`,
        :meth:`sync` or close."""
        with self._cond:
            self._write(records)

    def sync(self) -> None:
        """Make every line written so far durable."""
        with self._cond:
            while self._synced < self._written:
                if self._syncing:
                    self._cond.wait()
                    continue
                self._sync_locked()

    def close(self) -> None:
        """Sync and close. Later writes (a sender left behind after a stop) raise."""
        if self._fd < 0:
            return
        try:
            self.sync()
        finally:
            with self._cond:
                while self._syncing:  # never close the descriptor under a running sync
                    self._cond.wait()
                fd, self._fd = self._fd, -1
                self._cond.notify_all()  # the sync thread ends
            os.close(fd)
            self.states.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _write(self, records: Sequence[RowRecord]) -> int:
        if self._fd < 0:  # closed: a descriptor number may since name another file
            raise PetsyncError(f"journal {self.path} is closed; nothing more is recorded")
        data = "".join(map(_line, records))
        try:
            os.write(self._fd, data.encode())  # one write: O_APPEND keeps lines whole
        except OSError as exc:
            raise PetsyncError(
                f"cannot write journal {self.path}: {exc.strerror or exc}; free space or fix "
                "permissions, then re-run the same command to resume"
            ) from exc
        self.states.update(records)
        self._written += 1
        return self._written

    def _sync_locked(self) -> None:
        # Called with the condition held; releases it during fsync so others can append.
        self._syncing = True
        target = self._written
        fd = self._fd
        self._cond.release()
        started = time.perf_counter()
        try:
            _datasync(fd)
        except OSError as exc:
            raise PetsyncError(f"cannot write journal {self.path}: {exc.strerror or exc}") from exc
        finally:
            elapsed = time.perf_counter() - started
            self._cond.acquire()
            self._syncing = False
            self._cond.notify_all()
        self.fsyncs += 1
        self.fsync_seconds += elapsed
        self._synced = max(self._synced, target)


def _line(record: RowRecord) -> str:
    """A record's journal line: ``json.dumps`` of its JSON, written directly for the lines
    every row has (``sending``, then ``created`` with its id), a few microseconds each."""
    if (
        record.code is None
        and record.field is None
        and record.message is None
        and record.http_status is None
        and record.via is None
        and record.candidates is None
        and record.pet is None
        and type(record.row) is int
    ):
        state = record.state  # a StrEnum: formats as its value
        if record.id is None:
            return f'{{"row": {record.row}, "state": "{state}"}}\n'
        if type(record.id) is int:
            return f'{{"row": {record.row}, "state": "{state}", "id": {record.id}}}\n'
    return json.dumps(record.to_json(), ensure_ascii=False) + "\n"


def _datasync(fd: int) -> None:
    # fdatasync skips timestamps but still flushes the appended data and the new file
    # size, which is all a reader after a crash needs (SQLite makes the same choice).
    if hasattr(os, "fdatasync"):
        os.fdatasync(fd)
    else:  # pragma: no cover - macOS, Windows
        os.fsync(fd)


def _blank(fd: int, size: int) -> bool:
    """Whether the journal holds nothing but white space (a new one, or one never written)."""
    head = os.pread(fd, 1 << 16, 0)
    return size <= len(head) and not head.strip()


def _lines(fd: int) -> Iterator[bytes]:
    """The journal's lines as stored, each with its newline (the last may lack one), read
    a megabyte at a time: a journal of millions of rows is never held whole."""
    offset = 0
    pending = b""
    while chunk := os.pread(fd, 1 << 20, offset):
        offset += len(chunk)
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            yield line + b"\n"
    if pending:
        yield pending


def _states_dir(journal: Path) -> Path:
    """The working folder of a journal's row index (one per journal: journals are locked)."""
    return journal.with_name(journal.name + ".rows")


def _parse(
    lines: Iterator[bytes],
    path: Path,
    source: Path,
    sha256: str,
    settings: Mapping[str, Any],
    states: RowStates,
) -> tuple[Baseline | None, int]:
    """Check the header, fill ``states`` from the lines; the baseline and the good length
    (the bytes up to the end of the last whole line, counting a newline it may lack)."""
    first = next(lines, b"")
    try:
        header = json.loads(first)
    except ValueError as exc:
        raise InputError(
            f"{path} is not a petsync journal (line 1 is not JSON); pass "
            + JOURNAL
            + " with another path"
        ) from exc
    if not isinstance(header, dict) or header.get("petsync_journal") != JOURNAL_VERSION:
        raise InputError(f"{path} is not a petsync journal (version {JOURNAL_VERSION})")
    if header.get("sha256") != sha256:
        raise InputError(
            f"{source} changed since its import began (journal {path} was made for "
            f"sha256 {str(header.get('sha256'))[:12]}..., the file is now {sha256[:12]}...). "
            "Rows already created are in the journal and must not be sent again. To finish "
            "the old import, put the old file back and re-run. To import corrected rows, "
            "fix the reject file (<name>.rejects.csv) and import that. To treat the changed "
            f"file as new, move {path.name} away or pass "
            + JOURNAL.given(Placeholder("NEW_PATH"))
            + ": rows already created would then be created again"
        )
    if header.get("settings") != dict(settings):
        raise InputError(
            f"journal {path} was started with other reading options "
            f"({_describe(header.get('settings'))}); now: {_describe(settings)}. Re-run with "
            "the first run's "
            + MAP
            + "/"
            + SHEET
            + "/"
            + ENCODING
            + "/"
            + DELIMITER
            + ", or pass "
            + JOURNAL.given(Placeholder("NEW_PATH"))
            + " to start over (rows already created would be created again)"
        )
    baseline: Baseline | None = None
    batch: list[RowRecord] = []
    good_length = len(first.rstrip(b"\n")) + 1
    for index, line in enumerate(lines):
        is_last = not line.endswith(b"\n")  # only the last line can lack its newline
        raw = line if is_last else line[:-1]
        try:
            obj = json.loads(raw)
            if isinstance(obj, dict) and "baseline" in obj:
                baseline = Baseline.from_json(obj["baseline"])
                good_length += len(raw) + 1
                continue
            if isinstance(obj, dict) and "summary" in obj:
                good_length += len(raw) + 1
                continue
            record = RowRecord.from_json(obj)
        except (ValueError, KeyError, TypeError) as exc:
            if is_last:
                break  # a line torn by a crash mid-write
            raise InputError(
                f"journal {path} is damaged at line {index + 2}; it cannot be trusted to "
                "avoid duplicates. Check the rows by hand, then pass "
                + JOURNAL.given(Placeholder("NEW_PATH"))
            ) from exc
        batch.append(record)
        if len(batch) >= 10_000:
            states.update(batch)
            batch.clear()
        good_length += len(raw) + 1
    states.update(batch)
    return baseline, good_length


def _describe(settings: object) -> str:
    if not isinstance(settings, Mapping):
        return repr(settings)
    return ", ".join(f"{key}={value!r}" for key, value in settings.items())


@dataclass(frozen=True)
class Unfinished:
    """A journal of an earlier file of the same name that still has rows to do.

    ``pending`` and ``uncertain`` are as its last run left them; None when that run was
    killed before it could say (its rows in flight are uncertain).
    """

    path: Path
    pending: int | None
    uncertain: int | None


TAIL_BYTES = 64 * 1024  # where a journal's last summary line is looked for


def unfinished_journals(
    directory: Path, source_name: str, current: Path, outputs: Path | None = None
) -> list[Unfinished]:
    """Other journals in ``directory`` of files named ``source_name`` not finished (of
    the output folder ``outputs``, when both it and the journal name one).

    A new file under an old name is a new import; this finds what the old one left (rows
    pending or uncertain), so the summary can say so rather than let it be forgotten. Reads
    each journal's first line and its tail only.
    """
    found: list[Unfinished] = []
    for path in sorted(directory.glob("*.jsonl")):
        if path == current:
            continue
        try:
            with open_regular(path, "journal", limit=None) as handle:  # never a FIFO
                header = json.loads(handle.readline())
                if not isinstance(header, dict) or header.get("source") != source_name:
                    continue
                folder = header.get("outputs")
                if outputs is not None and folder and folder != str(outputs.absolute()):
                    continue  # another folder's file of that name
                size = path.stat().st_size
                handle.seek(max(0, size - TAIL_BYTES))
                tail = handle.read().decode("utf-8", errors="replace")
        except (OSError, ValueError, InputError):
            continue
        summary = None
        for line in reversed(tail.splitlines()):
            if '"summary"' in line:
                with contextlib.suppress(ValueError, TypeError, KeyError):
                    summary = json.loads(line)["summary"]
                break
            if '"state"' in line:  # rows changed after the last summary: a killed run
                break
        if summary is None:
            found.append(Unfinished(path, None, None))
        elif summary.get("pending") or summary.get("uncertain"):
            found.append(Unfinished(path, summary.get("pending"), summary.get("uncertain")))
    return found
