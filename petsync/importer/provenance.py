"""A row's identity through the fix loop: where it came from, and what became of it anywhere.

A row's identity is its *origin* (the sha256 of the first file it was read from) and its
row number there. The files an import writes carry both (``petsync_origin``,
``petsync_row``), so a reject file fixed and imported, in any bytes and any number of
times, still speaks of the same rows.

Every import has its own journal, by its own bytes (:mod:`petsync.importer.journal`). The
journals of one origin are found from the first file's sha256: ``<origin>.jsonl`` (the
first file's own) and the fix files' journals, listed one name a line in
``<origin>.fixes`` beside it (:func:`register_fix`). Before sending, an import reads the
*other* journals of its origin into a :class:`Ledger`: the rows that exist (created) or
may exist (sent, outcome unknown) through another file. Such a row is never sent again:
it counts as created (with that file's id) or as uncertain (settle it from that file).
Rows another file had refused (the API's 4xx, a stop) were not created: a fix sends them.

Every import of one origin holds a lock on ``<origin>.jsonl`` (:func:`origin_lock`; the
first file's own import holds it as its journal), so two fixes of the same row, or a fix
and the first file, cannot both send it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from petsync.core.errors import InputError
from petsync.core.files import fsync_dir, open_append, open_locked
from petsync.core.reading import open_regular, read_regular
from petsync.importer.row_states import RowRecord, RowState, RowStates
from petsync.importer.sheets.sheet import SheetRow
from petsync.importer.validation import ErrorCode, FieldError

FIXES_SUFFIX = ".fixes"
# Journal states that mean the pet exists, or may.
_MAY_EXIST = (RowState.CREATED, RowState.SENDING, RowState.UNCERTAIN)
_ROW_PREFIX = b'{"row": '  # how RowRecord.to_json() starts a row line


@dataclass
class Ledger:
    """The rows of one origin that exist or may exist through *other* files' imports.

    ``rows`` maps a row number of the first file to the record that says so, its ``via``
    naming the file whose import sent it.
    """

    rows: dict[int, RowRecord] = field(default_factory=dict)

    def get(self, row: int) -> RowRecord | None:
        return self.rows.get(row)


class KnownRows:
    """What is known of each row: this import's journal, then the :class:`Ledger`.

    A row created anywhere counts as created (this journal's record first); else a row
    that may exist (this journal's uncertainty first); else this journal's record.

    >>> own = RowStates()
    >>> known = KnownRows(own, Ledger({5: RowRecord(5, RowState.CREATED, id=9, via="f.csv")}))
    >>> known.get(5).id, known.get(6)
    (9, None)
    >>> own.close()
    """

    def __init__(self, own: RowStates | None, ledger: Ledger | None = None) -> None:
        self.own = own  # None in a dry run, which opens no journal of its own
        self.ledger = ledger or Ledger()

    def get(self, row: int) -> RowRecord | None:
        own = self.own.get(row) if self.own is not None else None
        if own is not None and own.state is RowState.CREATED:
            return own
        other = self.ledger.get(row)
        if other is not None and other.state is RowState.CREATED:
            return other
        if own is not None and own.state in _MAY_EXIST:
            return own
        return other if other is not None else own


_SHA256 = re.compile(r"[0-9a-f]{64}")


class FixIdentity:
    """The check of a fix file's rows' identities: each names the first file and its row
    there (``petsync_origin``, ``petsync_row``), one first file for the whole file, each of
    its rows once. Anything else is rejected: guessing could create a pet twice.

    ``origin`` is the first file's sha256 once a row named it.
    """

    def __init__(self) -> None:
        self.origin: str | None = None
        self.seen: dict[int, int] = {}  # petsync_row -> the row of this file that holds it

    def problems(self, row: SheetRow, origin_cell: str) -> tuple[FieldError, ...]:
        """Why ``row`` (numbered by its ``petsync_row``) cannot be told apart, if it cannot."""
        origin = origin_cell.strip().lower()
        if row.number < 0 or not _SHA256.fullmatch(origin):
            return (
                FieldError(
                    ErrorCode.ROW_ORIGIN_MISSING,
                    None,
                    "this row has no petsync_row and petsync_origin, so petsync cannot tell "
                    "whether it was created already; put the cells back as petsync wrote "
                    "them, or import a new pet from a new spreadsheet",
                ),
            )
        if self.origin is None:
            self.origin = origin
        if origin != self.origin:
            return (
                FieldError(
                    ErrorCode.ROW_ORIGIN_OTHER,
                    None,
                    f"this row comes from another first file (petsync_origin {origin[:12]}...) "
                    f"than the rows above it ({self.origin[:12]}...); import it in a file of "
                    "its own",
                ),
            )
        first = self.seen.setdefault(row.number, row.line)
        if first != row.line:
            return (
                FieldError(
                    ErrorCode.ROW_REPEATED,
                    None,
                    f"row {row.number} of the first file is also row {first} of this file; "
                    "a row is created at most once: delete one of the copies",
                ),
            )
        return ()


def fixes_index(directory: Path, origin: str) -> Path:
    """The list of the fix files' journals of ``origin``."""
    return directory / f"{origin}{FIXES_SUFFIX}"


def register_fix(directory: Path, origin: str, journal: Path) -> None:
    """Add the journal of a fix file of ``origin`` to its list (once), durably."""
    index = fixes_index(directory, origin)
    if journal.name in _listed(index):
        return
    try:
        fd = open_append(index, "fix index")  # never through a link, never a FIFO
        with os.fdopen(fd, "a", encoding="utf-8") as handle:
            handle.write(journal.name + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        fsync_dir(directory)
    except OSError as exc:
        raise InputError(
            f"cannot write {index}: {exc.strerror or exc}; fix the folder's permissions"
        ) from exc


def origin_journals(directory: Path, origin: str) -> list[Path]:
    """The journals of every import of ``origin``'s rows: the first file's, then its fixes."""
    found = [directory / f"{origin}.jsonl"]
    found += [directory / name for name in _listed(fixes_index(directory, origin))]
    return [path for path in found if path.is_file()]


def load_ledger(
    directory: Path, origin: str, current: Path | None, rows: Collection[int] | None = None
) -> Ledger:
    """The rows of ``origin`` that other imports created or may have (see the module doc).

    ``current`` (this import's journal; None for a dry run, which has none) is left out;
    ``rows``, when given, limits the
    ledger to those row numbers (a fix file reads the first file's big journal for its
    own few rows only).
    """
    ledger = Ledger()
    for path in origin_journals(directory, origin):
        if current is not None and path.resolve() == current.resolve():
            continue
        for record in _latest_records(path, rows).values():
            if record.state not in _MAY_EXIST:
                continue  # refused or unsent: not created, so a fix may send it
            known = ledger.rows.get(record.row)
            if known is None or known.state is not RowState.CREATED:
                ledger.rows[record.row] = record
    return ledger


@contextlib.contextmanager
def origin_lock(directory: Path, origin: str) -> Iterator[None]:
    """Hold the lock of the first file's journal while importing rows of ``origin`` from
    another file (:class:`LockedError` if an import holds it). The journal is created
    empty if missing: the first file's import fills it in when it runs."""
    path = directory / f"{origin}.jsonl"
    fd = open_locked(
        path,
        f"another petsync import is importing rows of the same first file (journal {path}); "
        "wait for it to finish (two imports of one row could create it twice)",
    )
    try:
        yield
    finally:
        os.close(fd)


def _listed(index: Path) -> list[str]:
    try:
        data = read_regular(index, "fix index", limit=None)  # petsync's own: a line a fix
    except InputError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            return []
        raise
    text = data.decode("utf-8", errors="replace")
    return [line.strip() for line in text.splitlines() if line.strip()]


def _latest_records(path: Path, rows: Collection[int] | None) -> dict[int, RowRecord]:
    """The last record of each row in the journal ``path`` (of ``rows`` only, if given).

    Each record's ``via`` names the file the journal belongs to, unless it says already.
    A line that cannot be read (one torn by a crash) is skipped: the journal's own import
    will deal with it.
    """
    latest: dict[int, RowRecord] = {}
    source: str | None = None
    handle = open_regular(path, "journal", limit=None)  # a FIFO or link target: exit 2
    with handle:
        for index, line in enumerate(handle):
            if index == 0:
                with contextlib.suppress(ValueError, AttributeError):
                    source = json.loads(line).get("source")
                continue
            if not line.startswith(_ROW_PREFIX):
                continue  # the baseline, a summary
            if rows is not None:
                end = line.find(b",", len(_ROW_PREFIX))
                try:
                    number = int(line[len(_ROW_PREFIX) : end])
                except ValueError:
                    continue
                if number not in rows:
                    continue
            try:
                record = RowRecord.from_json(json.loads(line))
            except (ValueError, KeyError, TypeError):
                continue
            if record.via is None and source is not None:
                record = dataclasses.replace(record, via=source)
            latest[record.row] = record
    return latest
