"""The files an import writes (rejects, accepted and uncertain rows) and the pass that writes them.

Each file repeats the input's own columns (the ``petsync_*`` ones of a re-imported petsync
file excepted) with the raw cells unchanged, then petsync's columns. Files are UTF-8 with a
BOM (so Excel picks the right encoding), comma-separated, every cell passed through the
Excel-safe rule of :mod:`petsync.importer.excel_safe`. Each file is written with the one
atomic recipe of :mod:`petsync.core.files`, so a reader never sees half a file.

The write pass (:func:`write_outputs`) reads the input once more and rebuilds the files
from it and the journal, so they are complete after a resumed run too. Each row's outcome
is decided once by :func:`classify`; :class:`OutputFiles` writes it where it belongs.
"""

from __future__ import annotations

import contextlib
import csv
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import TracebackType

from petsync.core.errors import PetsyncError
from petsync.core.files import atomic_write_text, atomic_writer
from petsync.importer.check import CheckedInput
from petsync.importer.excel_safe import escape_row
from petsync.importer.journal import Journal, RowRecord, RowState
from petsync.importer.validation import FieldError, validate_row

OUTPUT_ENCODING = "utf-8-sig"

REJECT_COLUMNS: tuple[str, ...] = (
    "petsync_row",
    "petsync_error_source",
    "petsync_error_code",
    "petsync_error_field",
    "petsync_error_message",
    "petsync_http_status",
)
ACCEPTED_COLUMNS: tuple[str, ...] = ("petsync_row", "petsync_id")
UNCERTAIN_COLUMNS: tuple[str, ...] = (
    "petsync_row",
    "petsync_uncertain_reason",
    "petsync_http_status",
)

# The reason of a row whose last journal line is `sending`: the run died mid-request.
SENDING_REASON = (
    "the run stopped while this row was being sent (crash or kill); the pet may or may not exist"
)


@dataclass(frozen=True)
class OutputPaths:
    """Where the files of one import go.

    >>> OutputPaths.for_input(Path("/d/pets.csv"), None).rejects.name
    'pets.rejects.csv'
    """

    rejects: Path
    accepted: Path
    uncertain: Path
    journal: Path

    @classmethod
    def for_input(
        cls, source: Path, out_dir: Path | None, journal: Path | None = None
    ) -> OutputPaths:
        """The files of ``source``: beside it, or in ``out_dir``; ``journal`` overrides one."""
        directory = out_dir if out_dir is not None else source.parent
        stem = source.stem
        return cls(
            rejects=directory / f"{stem}.rejects.csv",
            accepted=directory / f"{stem}.accepted.csv",
            uncertain=directory / f"{stem}.uncertain.csv",
            journal=journal if journal is not None else directory / f"{stem}.journal.jsonl",
        )

    def written(self, *, dry_run: bool) -> dict[str, str]:
        """The files a run writes, by name, as ``ImportReport.files`` lists them.

        >>> OutputPaths.for_input(Path("/d/pets.csv"), None).written(dry_run=True)
        {'rejects': '/d/pets.rejects.csv'}
        """
        if dry_run:
            return {"rejects": str(self.rejects)}
        return {
            "rejects": str(self.rejects),
            "accepted": str(self.accepted),
            "uncertain": str(self.uncertain),
            "journal": str(self.journal),
        }


class Outcome(StrEnum):
    """What became of one input row; each value is the name of the report's count."""

    REJECTED_LOCAL = "rejected_local"  # failed validation: the reject file, source "local"
    REJECTED_API = "rejected_api"  # the API answered 4xx: the reject file, source "api"
    CREATED = "created"  # the accepted file, with its new id
    UNCERTAIN = "uncertain"  # the uncertain file: it may or may not exist
    PENDING = "pending"  # valid and not sent (a stop, --max-errors): a re-run sends it
    WOULD_SEND = "would_send"  # valid, in a dry run


def classify(record: RowRecord | None, *, valid: bool, dry_run: bool) -> Outcome:
    """A row's outcome from its validity and its last journal line (None: never journaled).

    >>> classify(RowRecord(2, RowState.SENDING), valid=True, dry_run=False)
    <Outcome.UNCERTAIN: 'uncertain'>
    """
    if not valid:
        return Outcome.REJECTED_LOCAL
    if dry_run:
        return Outcome.WOULD_SEND
    if record is None:
        return Outcome.PENDING
    match record.state:
        case RowState.CREATED:
            return Outcome.CREATED
        case RowState.REJECTED:
            return Outcome.REJECTED_API
        case RowState.UNCERTAIN | RowState.SENDING:
            return Outcome.UNCERTAIN
        case RowState.UNSENT:
            return Outcome.PENDING


@dataclass(frozen=True)
class OutputRow:
    """One input row as the output files need it.

    ``carried`` holds its cells under the input's own columns; ``errors`` why validation
    refused it; ``record`` its last journal line, if any.
    """

    number: int
    carried: Sequence[str]
    errors: tuple[FieldError, ...] = ()
    record: RowRecord | None = None


class OutputFiles:
    """The output files of one write pass; one small method per outcome writes a row.

    Use it as a context manager: when the block ends, every file replaces its old version
    (rejects, then accepted, then uncertain); if the block raises, all are dropped and the
    old ones stay. A dry run writes the reject file only. ``counts`` tallies the outcomes.
    """

    def __init__(self, paths: OutputPaths, carried_header: Sequence[str], *, dry_run: bool):
        self.dry_run = dry_run
        self.counts: Counter[Outcome] = Counter()
        self._files: list[AtomicCsv] = []
        try:
            self._rejects = self._open(paths.rejects, [*carried_header, *REJECT_COLUMNS])
            if not dry_run:
                self._accepted = self._open(paths.accepted, [*carried_header, *ACCEPTED_COLUMNS])
                self._uncertain = self._open(paths.uncertain, [*carried_header, *UNCERTAIN_COLUMNS])
        except BaseException as exc:
            self._abort(exc)
            raise

    def write(self, row: OutputRow) -> Outcome:
        """Classify ``row`` once, count it, and write it to the file its outcome belongs in."""
        outcome = classify(row.record, valid=not row.errors, dry_run=self.dry_run)
        self.counts[outcome] += 1
        match outcome:
            case Outcome.REJECTED_LOCAL:
                self.reject_local(row)
            case Outcome.REJECTED_API:
                self.reject_api(row)
            case Outcome.CREATED:
                self.accept(row)
            case Outcome.UNCERTAIN:
                self.mark_uncertain(row)
            case Outcome.PENDING | Outcome.WOULD_SEND:
                pass  # in no file: a re-run (or the real run) sends it
        return outcome

    def reject_local(self, row: OutputRow) -> None:
        """A row validation refused: the reject file, every error joined in one line."""
        errors = row.errors
        self._rejects.write(
            [
                *row.carried,
                str(row.number),
                "local",
                ";".join(e.code for e in errors),
                ";".join(e.field for e in errors if e.field),
                "; ".join(e.message for e in errors),
                "",
            ]
        )

    def reject_api(self, row: OutputRow) -> None:
        """A row the API refused (a final 4xx): the reject file, with the API's answer."""
        record = _journaled(row)
        self._rejects.write(
            [
                *row.carried,
                str(row.number),
                "api",
                record.code or "",
                record.field or "",
                record.message or "",
                _status(record),
            ]
        )

    def accept(self, row: OutputRow) -> None:
        """A created row: the accepted file, with the id the API gave it."""
        record = _journaled(row)
        self._accepted.write([*row.carried, str(row.number), str(record.id)])

    def mark_uncertain(self, row: OutputRow) -> None:
        """A row that may or may not exist: the uncertain file, with the reason."""
        record = _journaled(row)
        reason = record.message or SENDING_REASON
        self._uncertain.write([*row.carried, str(row.number), reason, _status(record)])

    def __enter__(self) -> OutputFiles:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is not None:
            self._abort(exc)
            return
        try:
            for output in self._files:
                output.commit()
        except BaseException as error:
            self._abort(error)  # the files committed so far stay
            raise

    def _open(self, path: Path, header: Sequence[str]) -> AtomicCsv:
        output = AtomicCsv(path, header)
        self._files.append(output)
        return output

    def _abort(self, exc: BaseException) -> None:
        for output in self._files:
            output.abort(exc)


def _journaled(row: OutputRow) -> RowRecord:
    # classify() gives these outcomes only to rows with a journal line.
    assert row.record is not None
    return row.record


def _status(record: RowRecord) -> str:
    return "" if record.http_status is None else str(record.http_status)


@dataclass(frozen=True)
class WrittenOutputs:
    """What the write pass found: each outcome's count, and a dry run's normalisations.

    (A real run counts normalisations as it sends; a dry run sends nothing.)
    """

    counts: Counter[Outcome]
    normalisations: dict[str, int]


def write_outputs(
    checked: CheckedInput, paths: OutputPaths, journal: Journal | None
) -> WrittenOutputs:
    """The write pass: rebuild the output files from the input and ``journal``.

    Without a journal (a dry run) every row is validated and only the reject file is
    written. Raises :class:`~petsync.core.errors.InputError` if the input changed since the
    check pass, :class:`~petsync.core.errors.PetsyncError` if a file cannot be written.
    """
    states = journal.states if journal is not None else {}
    dry_run = journal is None
    normalisations: Counter[str] = Counter()
    with (
        checked.reopen() as sheet,
        OutputFiles(paths, checked.carried_header, dry_run=dry_run) as outputs,
    ):
        for sheet_row in sheet.rows():
            record = states.get(sheet_row.number)
            errors: tuple[FieldError, ...] = ()
            # A row in the journal was valid when it was sent: no need to check it again.
            if record is None:
                result = validate_row(sheet_row.cells, checked.columns, checked.width)
                errors = result.errors
                if dry_run:
                    normalisations.update(n.value for n in result.normalisations)
            row = OutputRow(sheet_row.number, checked.carried(sheet_row), errors, record)
            outputs.write(row)
    return WrittenOutputs(outputs.counts, dict(sorted(normalisations.items())))


class AtomicCsv:
    """A CSV file written under a temporary name and renamed into place by :meth:`commit`.

    The recipe is :func:`petsync.core.files.atomic_writer`'s; this class only keeps it open
    across the rows of a pass and names the file in every error.
    """

    def __init__(self, path: Path, header: Sequence[str]) -> None:
        self.path = path
        self.rows = 0
        self._file = contextlib.ExitStack()
        try:
            handle = self._file.enter_context(
                atomic_writer(path, encoding=OUTPUT_ENCODING, newline="")
            )
        except OSError as exc:
            raise _cannot_write(path, exc) from exc
        self._writer = csv.writer(handle)
        self._write(header)

    def write(self, cells: Sequence[str]) -> None:
        self._write(cells)
        self.rows += 1

    def commit(self) -> None:
        """Put the file in place (synced, its directory too); on failure the old one stays."""
        try:
            self._file.close()
        except OSError as exc:
            raise _cannot_write(self.path, exc) from exc

    def abort(self, exc: BaseException) -> None:
        """Drop the temporary file because ``exc`` ended the pass; the old file stays."""
        # Cleanup must not hide the error that stopped the pass (a Ctrl-C above all).
        with contextlib.suppress(OSError):
            self._file.__exit__(type(exc), exc, exc.__traceback__)

    def _write(self, cells: Sequence[str]) -> None:
        try:
            self._writer.writerow(escape_row(cells))
        except OSError as exc:
            error = _cannot_write(self.path, exc)
            self.abort(error)
            raise error from exc


def write_text_atomic(path: Path, text: str) -> None:
    """Write a small text file (the JSON report) atomically."""
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise _cannot_write(path, exc) from exc


def _cannot_write(path: Path, exc: OSError) -> PetsyncError:
    return PetsyncError(f"cannot write {path}: {exc.strerror or exc}")
