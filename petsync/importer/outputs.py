"""The write stage of an import: the reject, accepted and uncertain files rebuilt.

:func:`write_outputs` rebuilds the files from the checked rows (the check stage's, not the
input read again) and the journal, so they are complete after a resumed run too. Each
row's outcome is decided once (:func:`~petsync.importer.output_rows.classify`);
:class:`OutputFiles` writes it where it belongs. Where the files go is
:mod:`petsync.importer.output_paths`, what their rows hold
:mod:`petsync.importer.output_rows`, how they are written :mod:`petsync.importer.output_csv`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from petsync.core.errors import PetsyncError
from petsync.core.wording import Said
from petsync.importer.journal import Journal
from petsync.importer.output_csv import AtomicCsv, earlier_rows
from petsync.importer.output_paths import OutputPaths
from petsync.importer.output_rows import (
    ACCEPTED_COLUMNS,
    REJECT_COLUMNS,
    UNCERTAIN_COLUMNS,
    Outcome,
    OutputRow,
    accepted_cells,
    api_reject_cells,
    as_sent,
    classify,
    local_reject_cells,
    uncertain_cells,
)
from petsync.importer.precheck import CheckedInput
from petsync.importer.provenance import KnownRows, Ledger
from petsync.importer.validation import FieldError

# Rejected rows a summary shows (row, field, reason), the first ones; the rest are counted.
SHOWN_REJECTS = 10


class OutputFiles:
    """The output files of one write stage; one small method per outcome writes a row.

    Use it as a context manager: when the block ends, every file with rows replaces its old
    version (rejects, then accepted, then uncertain) and an old file that would now be
    empty is removed; if the block raises, all are dropped and the old ones stay. A dry run
    writes the reject file only. ``counts`` tallies the outcomes.

    ``delimiter`` is the input's, so a ``;`` file gets ``;`` outputs. ``replaced_rows``
    (for a fed-back petsync file: the ``petsync_row`` numbers it holds) keeps the rows of
    each file's old version whose numbers are not among them: earlier rounds' rows stay.
    Those old versions are read as inputs are (any encoding; ``input_encoding`` for the
    input itself, a file fixed in place); one that cannot be read is kept aside, and
    ``notices`` says so.
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
        input_path: Path | None = None,
        input_encoding: str | None = None,
    ):
        self.dry_run = dry_run
        self.notices: list[Said] = []
        # The first rejected rows, as the summary shows them (the reject file has them all).
        self.first_rejects: list[dict[str, str]] = []
        self._input = input_path
        self._input_encoding = input_encoding
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
        self._reject(local_reject_cells(row))

    def reject_api(self, row: OutputRow) -> None:
        """A row the API refused (a final 4xx): the reject file, with the API's answer."""
        self._reject(api_reject_cells(row))

    def _reject(self, cells: list[str]) -> None:
        self._rejects.write(cells)
        if len(self.first_rejects) < SHOWN_REJECTS:
            number, source, code, field, message = cells[-len(REJECT_COLUMNS) :][:5]
            self.first_rejects.append(
                {"row": number, "source": source, "code": code, "field": field, "message": message}
            )

    def accept(self, row: OutputRow) -> None:
        """A created row: the accepted file, with the id the API gave it."""
        self._accepted.write(accepted_cells(row))

    def mark_uncertain(self, row: OutputRow) -> None:
        """A row that may or may not exist: the uncertain file, with the reason."""
        self._uncertain.write(uncertain_cells(row))

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
        if self._replaced is None:
            return output
        # The input itself (a reject file fixed in place) is read as the check stage read it.
        encoding = self._input_encoding if _same_file(path, self._input) else None
        try:
            for cells in earlier_rows(
                path, header, self._replaced, self._replaced_origin, encoding=encoding
            ):
                output.write(cells)
        except PetsyncError as exc:
            # Pets may have been created: the outputs are written all the same, and the
            # earlier file is kept under another name for its rows, with a word on why.
            output.abort(None)
            self._files.remove(output)
            aside = keep_aside(path)
            self.notices.append(
                f"could not read the earlier {path.name} to keep its rows ("
                + exc.words
                + f"); it is kept as {aside.name} and its earlier rows are not in the new "
                f"{path.name}"
            )
            output = AtomicCsv(path, header, delimiter=self._delimiter)
            self._files.append(output)
        return output

    def _abort(self, exc: BaseException) -> None:
        for output in self._files:
            output.abort(exc)


@dataclass(frozen=True)
class WrittenOutputs:
    """What the write stage found: each outcome's count, and a dry run's normalisations.

    (A real run counts normalisations as it sends; a dry run sends nothing.)
    """

    counts: Counter[Outcome]
    normalisations: dict[str, int]
    files: dict[str, str]
    notices: tuple[Said, ...] = ()
    first_rejects: tuple[dict[str, str], ...] = ()


def write_outputs(
    checked: CheckedInput,
    paths: OutputPaths,
    journal: Journal | None,
    ledger: Ledger | None = None,
    *,
    input_encoding: str | None = None,
) -> WrittenOutputs:
    """The write stage: rebuild the output files from the checked rows and ``journal``.

    Without a journal (a dry run) only the reject file is written; a row the ledger knows
    as created, or maybe created, is no reject then either. A row's errors are the check's;
    a dry run counts the check's normalisations but for the rows the ledger knows.
    ``ledger`` holds the rows of the same origin created (or maybe created)
    through other files: they are written as such (:class:`~petsync.importer.provenance.
    KnownRows`). ``input_encoding`` is the one asked for the input (None: detected), with
    which an output that is the input itself (a file fixed in place) is read back. Raises
    :class:`~petsync.core.errors.PetsyncError` if a file cannot be written.
    """
    dry_run = journal is None
    known: KnownRows | None = None
    if journal is not None or ledger is not None:
        known = KnownRows(journal.states if journal is not None else None, ledger)
    normalisations: Counter[str] = Counter(checked.normalisations if dry_run else {})
    origin, positions = checked.output_origin, checked.field_positions
    with OutputFiles(
        paths,
        checked.carried_header,
        dry_run=dry_run,
        delimiter=checked.delimiter_char,
        replaced_rows=checked.original_rows if checked.petsync_written else None,
        replaced_origin=origin,
        input_path=checked.path,
        input_encoding=input_encoding,
    ) as outputs:
        for row in checked.rows:
            record = None
            if known is not None and not row.whole:
                record = known.get(row.number)
            errors: tuple[FieldError, ...] = ()
            repeat_of = None
            # A row in the journal was valid when it was sent: it has no errors to write.
            if record is None:
                errors, repeat_of = row.errors, row.repeat_of
            elif dry_run and row.content is not None:
                # Known from another file's journal: not counted, as it is not to send.
                normalisations.subtract(row.normalisations)
            carried: Sequence[str] = row.carried
            if record is not None and record.via is not None and record.pet is not None:
                carried = as_sent(row.carried, positions, record.pet)
            outputs.write(OutputRow(row.original, carried, errors, record, origin, repeat_of))
    counted = {name: count for name, count in sorted(normalisations.items()) if count > 0}
    return WrittenOutputs(
        outputs.counts,
        counted,
        outputs.written(),
        tuple(outputs.notices),
        tuple(outputs.first_rejects),
    )


def _same_file(path: Path, other: Path | None) -> bool:
    try:
        return other is not None and path.exists() and path.samefile(other)
    except OSError:
        return False


def keep_aside(path: Path) -> Path:
    """Rename ``path`` to a free ``NAME.unread-N.csv`` beside it, so no output replaces it."""
    for number in range(1, 1000):
        aside = path.with_name(f"{path.stem}.unread-{number}{path.suffix}")
        if not aside.exists():
            break
    try:
        path.rename(aside)
    except OSError as exc:
        raise PetsyncError(
            f"cannot read the earlier {path} to keep its rows, nor move it aside to "
            f"{aside.name} ({exc.strerror or exc}); move it away and re-run the same command"
        ) from exc
    return aside
