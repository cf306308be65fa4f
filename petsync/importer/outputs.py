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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import TracebackType

from petsync.core.errors import ConfigError, PetsyncError
from petsync.core.files import atomic_write_text, atomic_writer, check_writable_dir
from petsync.importer.excel_safe import escape_row, unescape_cell
from petsync.importer.journal import Journal
from petsync.importer.precheck import CheckedInput
from petsync.importer.provenance import KnownRows, Ledger
from petsync.importer.row_states import RowRecord, RowState
from petsync.importer.validation import ErrorCode, FieldError, visible_controls

OUTPUT_ENCODING = "utf-8-sig"

# petsync_row and petsync_origin (the sha256 of the first file) are a row's identity
# through every round of fixing (see petsync.importer.provenance).
REJECT_COLUMNS: tuple[str, ...] = (
    "petsync_row",
    "petsync_error_source",
    "petsync_error_code",
    "petsync_error_field",
    "petsync_error_message",
    "petsync_http_status",
    "petsync_origin",
)
# petsync_fixed_in: the fix file whose import created the row (blank: this file's).
ACCEPTED_COLUMNS: tuple[str, ...] = (
    "petsync_row",
    "petsync_id",
    "petsync_origin",
    "petsync_fixed_in",
)
UNCERTAIN_COLUMNS: tuple[str, ...] = (
    "petsync_row",
    "petsync_uncertain_reason",
    "petsync_http_status",
    "petsync_candidate_ids",
    "petsync_origin",
)

# The reason of a row whose last journal line is `sending`: the run died mid-request.
SENDING_REASON = (
    "the run stopped while this row was being sent (crash or kill); the pet may or may not exist"
)


# Where journals live, under the output directory: one per input content, by its sha256.
JOURNAL_DIR = Path(".petsync") / "journals"
# Suffixes of the files an import writes, stripped from an input's stem so that a fed-back
# reject or uncertain file writes under the first file's name (never pets.rejects.rejects).
ROUND_SUFFIXES: tuple[str, ...] = (".rejects", ".uncertain", ".accepted")


def output_stem(source: Path, *, fed_back: bool = True) -> str:
    """The stem the outputs of ``source`` are named after: the first file's, in every round.

    ``fed_back`` says the file is one petsync wrote (it has ``petsync_row``): only then is a
    ``.rejects`` or ``.uncertain`` suffix taken off, since only then can the earlier rounds'
    rows be kept in the outputs it shares with them.

    >>> output_stem(Path("inbox/new-pets.rejects.csv")), output_stem(Path("pets.csv"))
    ('new-pets', 'pets')
    >>> output_stem(Path("new-pets.rejects.csv"), fed_back=False)
    'new-pets.rejects'
    """
    stem = source.stem
    if not fed_back:
        return stem
    for suffix in ROUND_SUFFIXES:
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


def journal_path(directory: Path, sha256: str) -> Path:
    """The journal of the input whose bytes have ``sha256``, under ``directory``.

    >>> journal_path(Path("imports"), "9f" * 32).as_posix()[:38]
    'imports/.petsync/journals/9f9f9f9f9f9f'
    """
    return directory / JOURNAL_DIR / f"{sha256}.jsonl"


@dataclass(frozen=True)
class OutputPaths:
    """Where the files of one import go.

    >>> OutputPaths.for_input(Path("/d/pets.csv"), None, sha256="ab").rejects.name
    'pets.rejects.csv'
    """

    rejects: Path
    accepted: Path
    uncertain: Path
    journal: Path

    @classmethod
    def for_input(
        cls,
        source: Path,
        out_dir: Path | None,
        *,
        sha256: str,
        journal: Path | None = None,
        fed_back: bool = True,
    ) -> OutputPaths:
        """The files of ``source``: beside it, or in ``out_dir``; ``journal`` overrides one.

        The journal is found by the input's content (``sha256``), not its name: a new file
        under an old name is a new import, the same bytes again are the same import.
        """
        directory = out_dir if out_dir is not None else source.parent
        stem = output_stem(source, fed_back=fed_back)
        return cls(
            rejects=directory / f"{stem}.rejects.csv",
            accepted=directory / f"{stem}.accepted.csv",
            uncertain=directory / f"{stem}.uncertain.csv",
            journal=journal if journal is not None else journal_path(directory, sha256),
        )

    @property
    def directory(self) -> Path:
        return self.rejects.parent


def check_writable(directory: Path, what: str) -> None:
    """Fail before anything is sent when ``directory`` cannot be created or written.

    Creates it (and its parents) if missing, then proves files can be created in it with
    the one check of :func:`~petsync.core.files.check_writable_dir`: a read-only mount or a
    missing permission shows here, exit 2.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the {what} in {directory}: {exc.strerror or exc}; fix its "
            "permissions or choose another --out-dir (nothing was sent)"
        ) from exc
    check_writable_dir(directory, f"folder of the {what}")


class Outcome(StrEnum):
    """What became of one input row; each value is the name of the report's count."""

    REJECTED_LOCAL = "rejected_local"  # failed validation: the reject file, source "local"
    REJECTED_API = "rejected_api"  # the API answered 4xx: the reject file, source "api"
    CREATED = "created"  # the accepted file, with its new id
    UNCERTAIN = "uncertain"  # the uncertain file: it may or may not exist
    PENDING = "pending"  # valid and not sent (a stop, --max-errors): a re-run sends it
    WOULD_SEND = "would_send"  # valid, in a dry run
    DUPLICATE = "duplicates"  # repeats an earlier row of the sheet: not sent, in no file


def classify(
    record: RowRecord | None, *, valid: bool, dry_run: bool, repeat: bool = False
) -> Outcome:
    """A row's outcome from its validity and its last journal line (None: never journaled).

    ``repeat`` says the row repeats an earlier one and repeats are not sent.

    >>> classify(RowRecord(2, RowState.SENDING), valid=True, dry_run=False)
    <Outcome.UNCERTAIN: 'uncertain'>
    """
    if not valid:
        return Outcome.REJECTED_LOCAL
    if record is None and repeat:
        return Outcome.DUPLICATE
    if dry_run and (record is None or record.state in (RowState.REJECTED, RowState.UNSENT)):
        return Outcome.WOULD_SEND  # a dry run knows only what exists or may (the ledger)
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
    refused it; ``record`` its last journal line, if any; ``origin`` the sha256 of the
    first file it came from (blank when unknown); ``repeat_of`` the earlier row it repeats
    when repeats are not sent. A ``number`` below 1 (a fed-back row with no identity) is
    written blank.
    """

    number: int
    carried: Sequence[str]
    errors: tuple[FieldError, ...] = ()
    record: RowRecord | None = None
    origin: str = ""
    repeat_of: int | None = None

    @property
    def number_text(self) -> str:
        return str(self.number) if self.number > 0 else ""


class OutputFiles:
    """The output files of one write pass; one small method per outcome writes a row.

    Use it as a context manager: when the block ends, every file with rows replaces its old
    version (rejects, then accepted, then uncertain) and an old file that would now be
    empty is removed; if the block raises, all are dropped and the old ones stay. A dry run
    writes the reject file only. ``counts`` tallies the outcomes.

    ``delimiter`` is the input's, so a ``;`` file gets ``;`` outputs. ``replaced_rows``
    (for a fed-back petsync file: the ``petsync_row`` numbers it holds) keeps the rows of
    each file's old version whose numbers are not among them: earlier rounds' rows stay.
    """

    def __init__(
        self,
        paths: OutputPaths,
        carried_header: Sequence[str],
        *,
        dry_run: bool,
        delimiter: str = ",",
        replaced_rows: frozenset[int] | None = None,
        replaced_origin: str = "",
    ):
        self.dry_run = dry_run
        self.counts: Counter[Outcome] = Counter()
        self._files: list[AtomicCsv] = []
        self._delimiter = delimiter
        self._replaced = replaced_rows
        self._replaced_origin = replaced_origin
        try:
            self._rejects = self._open(paths.rejects, [*carried_header, *REJECT_COLUMNS])
            if not dry_run:
                self._accepted = self._open(paths.accepted, [*carried_header, *ACCEPTED_COLUMNS])
                self._uncertain = self._open(paths.uncertain, [*carried_header, *UNCERTAIN_COLUMNS])
        except BaseException as exc:
            self._abort(exc)
            raise

    def written(self) -> dict[str, str]:
        """The files this pass left in place, by kind (after the block ended)."""
        names = ("rejects", "accepted", "uncertain")
        return {name: str(f.path) for name, f in zip(names, self._files, strict=False) if f.rows}

    def write(self, row: OutputRow) -> Outcome:
        """Classify ``row`` once, count it, and write it to the file its outcome belongs in."""
        outcome = classify(
            row.record,
            valid=not row.errors,
            dry_run=self.dry_run,
            repeat=row.repeat_of is not None,
        )
        self.counts[outcome] += 1
        match outcome:
            case Outcome.REJECTED_LOCAL:
                self.reject_local(row)
            case Outcome.REJECTED_API:
                self.reject_api(row)
            case Outcome.CREATED if not self.dry_run:
                self.accept(row)
            case Outcome.UNCERTAIN if not self.dry_run:
                self.mark_uncertain(row)
            case Outcome.CREATED | Outcome.UNCERTAIN:
                pass  # a dry run writes the reject file only
            case Outcome.PENDING | Outcome.WOULD_SEND:
                pass  # in no file: a re-run (or the real run) sends it
            case Outcome.DUPLICATE:
                pass  # in no file: the row it repeats stands for it (the report names it)
        return outcome

    def reject_local(self, row: OutputRow) -> None:
        """A row validation refused: the reject file, every error joined in one line."""
        errors = row.errors
        carried = row.carried
        if any(e.code == ErrorCode.CONTROL_CHARACTER for e in errors):
            carried = visible_controls(carried)
        self._rejects.write(
            [
                *carried,
                row.number_text,
                "local",
                ";".join(e.code for e in errors),
                ";".join(e.field for e in errors if e.field),
                "; ".join(e.message for e in errors),
                "",
                row.origin,
            ]
        )

    def reject_api(self, row: OutputRow) -> None:
        """A row the API refused (a final 4xx): the reject file, with the API's answer."""
        record = _journaled(row)
        self._rejects.write(
            [
                *row.carried,
                row.number_text,
                "api",
                record.code or "",
                record.field or "",
                record.message or "",
                _status(record),
                row.origin,
            ]
        )

    def accept(self, row: OutputRow) -> None:
        """A created row: the accepted file, with the id the API gave it."""
        record = _journaled(row)
        self._accepted.write(
            [*row.carried, row.number_text, str(record.id), row.origin, record.via or ""]
        )

    def mark_uncertain(self, row: OutputRow) -> None:
        """A row that may or may not exist: the uncertain file, with the reason."""
        record = _journaled(row)
        reason = record.message or SENDING_REASON
        candidates = " ".join(str(i) for i in record.candidates or ())
        if record.via is not None:
            reason += f" (sent from {record.via}: petsync import {record.via} --settle decides it)"
        self._uncertain.write(
            [*row.carried, row.number_text, reason, _status(record), candidates, row.origin]
        )

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
                if output.rows:
                    output.commit()
                else:  # nothing to say: no empty file, and no stale one left behind
                    output.abort(None)
                    output.path.unlink(missing_ok=True)
        except BaseException as error:
            self._abort(error)  # the files committed so far stay
            raise

    def _open(self, path: Path, header: Sequence[str]) -> AtomicCsv:
        output = AtomicCsv(path, header, delimiter=self._delimiter)
        self._files.append(output)
        if self._replaced is not None:
            for cells in earlier_rows(path, header, self._replaced, self._replaced_origin):
                output.write(cells)
        return output

    def _abort(self, exc: BaseException) -> None:
        for output in self._files:
            output.abort(exc)


def earlier_rows(
    path: Path, header: Sequence[str], replaced: frozenset[int], origin: str = ""
) -> Iterator[list[str]]:
    """The rows of an earlier round's ``path`` to keep: those not in ``replaced``.

    A row whose ``petsync_origin`` names another first file than ``origin`` is another
    file's row of the same number: it is kept (a blank origin matches any).

    Cells go under ``header`` by column name (blank where the old file had no such column),
    with the Excel-safe prefix undone (the writer puts it back).
    """
    try:
        handle = path.open(encoding=OUTPUT_ENCODING, newline="")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise _cannot_write(path, exc) from exc
    with handle:
        first = handle.readline()
        delimiter = max((",", ";", "\t"), key=first.count)
        handle.seek(0)
        try:
            for record in csv.DictReader(handle, delimiter=delimiter):
                number = (record.get("petsync_row") or "").strip()
                of = (record.get("petsync_origin") or "").strip()
                same = not origin or not of or of == origin
                if same and number.isdigit() and int(number) in replaced:
                    continue
                yield [unescape_cell(record.get(column) or "") for column in header]
        except (csv.Error, UnicodeDecodeError) as exc:
            raise PetsyncError(
                f"cannot read the earlier {path} to keep its rows ({exc}); move it away and "
                "re-run the same command"
            ) from exc


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
    files: dict[str, str]


def write_outputs(
    checked: CheckedInput,
    paths: OutputPaths,
    journal: Journal | None,
    ledger: Ledger | None = None,
) -> WrittenOutputs:
    """The write pass: rebuild the output files from the input and ``journal``.

    Without a journal (a dry run) only the reject file is written; a row the ledger knows
    as created, or maybe created, is no reject then either. A row that passed the check
    pass is not checked again (:meth:`~petsync.importer.precheck.CheckedInput.passed`):
    the check counted its normalisations.
    ``ledger`` holds the rows of the same origin created (or maybe created)
    through other files: they are written as such (:class:`~petsync.importer.provenance.
    KnownRows`). Raises :class:`~petsync.core.errors.InputError` if the input changed since
    the check pass, :class:`~petsync.core.errors.PetsyncError` if a file cannot be written.
    """
    dry_run = journal is None
    known: KnownRows | None = None
    if journal is not None or ledger is not None:
        known = KnownRows(journal.states if journal is not None else None, ledger)
    normalisations: Counter[str] = Counter(checked.normalisations if dry_run else {})
    with (
        checked.reopen() as sheet,
        OutputFiles(
            paths,
            checked.carried_header,
            dry_run=dry_run,
            delimiter=checked.delimiter_char,
            replaced_rows=checked.original_rows if checked.petsync_written else None,
            replaced_origin=checked.output_origin,
        ) as outputs,
    ):
        for sheet_row in sheet.rows():
            problems = checked.problems_of(sheet_row)
            record = None
            if known is not None and not problems:
                record = known.get(sheet_row.number)
            errors: tuple[FieldError, ...] = ()
            repeat_of = None
            # A row in the journal was valid when it was sent: no need to check it again.
            if record is None:
                if checked.passed(sheet_row):  # valid: the check pass said so
                    repeat_of = checked.repeats_row(sheet_row)
                else:
                    errors = checked.validate(sheet_row).errors
            elif dry_run and checked.passed(sheet_row):
                # Known from another file's journal: not counted, as it is not checked.
                normalisations.subtract(n.value for n in checked.validate(sheet_row).normalisations)
            number = checked.original_number(sheet_row)
            if record is not None and record.via is not None and record.pet is not None:
                carried = checked.carried_as_sent(sheet_row, record.pet)
            else:
                carried = checked.carried(sheet_row)
            row = OutputRow(number, carried, errors, record, checked.output_origin, repeat_of)
            outputs.write(row)
    counted = {name: count for name, count in sorted(normalisations.items()) if count > 0}
    return WrittenOutputs(outputs.counts, counted, outputs.written())


class AtomicCsv:
    """A CSV file written under a temporary name and renamed into place by :meth:`commit`.

    The recipe is :func:`petsync.core.files.atomic_writer`'s; this class only keeps it open
    across the rows of a pass and names the file in every error.
    """

    def __init__(self, path: Path, header: Sequence[str], *, delimiter: str = ",") -> None:
        self.path = path
        self.rows = 0
        self._file = contextlib.ExitStack()
        try:
            handle = self._file.enter_context(
                atomic_writer(path, encoding=OUTPUT_ENCODING, newline="")
            )
        except OSError as exc:
            raise _cannot_write(path, exc) from exc
        self._writer = csv.writer(handle, delimiter=delimiter)
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

    def abort(self, exc: BaseException | None) -> None:
        """Drop the temporary file (``exc`` ended the pass, or it is not wanted)."""
        # Cleanup must not hide the error that stopped the pass (a Ctrl-C above all).
        error = exc if exc is not None else _Unwanted()
        with contextlib.suppress(OSError, _Unwanted):
            self._file.__exit__(type(error), error, error.__traceback__)

    def _write(self, cells: Sequence[str]) -> None:
        try:
            self._writer.writerow(escape_row(cells))
        except OSError as exc:
            error = _cannot_write(self.path, exc)
            self.abort(error)
            raise error from exc


class _Unwanted(Exception):
    """Passed to the atomic writer to drop a temporary file nobody wants (an empty output)."""


def write_text_atomic(path: Path, text: str) -> None:
    """Write a small text file (the JSON report) atomically."""
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise _cannot_write(path, exc) from exc


def _cannot_write(path: Path, exc: OSError) -> PetsyncError:
    return PetsyncError(f"cannot write {path}: {exc.strerror or exc}")
