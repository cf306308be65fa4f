"""An import's output files on disk: written atomically, read back in a later round.

Files are UTF-8 with a BOM (so Excel picks the right encoding), every cell passed through
the Excel-safe rule of :mod:`petsync.importer.sheets.excel_safe` (undone when an earlier
round's rows are read back). Each file is written with the one atomic recipe of
:mod:`petsync.core.files`, so a reader never sees half a file, and every error names it.
"""

from __future__ import annotations

import contextlib
import csv
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from petsync.core.errors import InputError, PetsyncError
from petsync.core.files import atomic_write_text, atomic_writer
from petsync.core.reading import describe_kind
from petsync.importer.sheets.excel_safe import escape_row, unescape_cell
from petsync.importer.sheets.opening import open_spreadsheet
from petsync.importer.sheets.sheet import ReadOptions

OUTPUT_ENCODING = "utf-8-sig"


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


def earlier_rows(
    path: Path,
    header: Sequence[str],
    replaced: frozenset[int],
    origin: str = "",
    *,
    encoding: str | None = None,
) -> Iterator[list[str]]:
    """The rows of an earlier round's ``path`` to keep: those not in ``replaced``.

    A row whose ``petsync_origin`` names another first file than ``origin`` is another
    file's row of the same number: it is kept (a blank origin matches any).

    The file is read as an input is (:func:`~petsync.importer.sheets.opening.open_spreadsheet`:
    BOM, UTF-8, UTF-16, cp1252, or ``encoding``; comma, semicolon or tab), since a person
    may have fixed it in place in any editor. Cells go under ``header`` by column name
    (blank where the old file had no such column), with the Excel-safe prefix undone (the
    writer puts it back). A file that cannot be read raises
    :class:`~petsync.core.errors.InputError` naming it, as does a name that holds no
    regular file (a link or FIFO swapped in since the check before sending): its target is
    never read into the new file.
    """
    try:
        here = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISREG(here.st_mode):
        raise InputError(
            f"the earlier {path} is {describe_kind(here.st_mode)}, not a regular file; "
            "petsync reads back only a regular file at an output's name"
        )
    with open_spreadsheet(path, ReadOptions(encoding=encoding)) as sheet:
        titles = [title.strip() for title in sheet.header]
        if not sheet.petsync_written:  # its cells still carry the Excel-safe prefix
            titles = [unescape_cell(title) for title in titles]
        where = {title: i for i, title in reversed(list(enumerate(titles)))}
        number_at, origin_at = where.get("petsync_row"), where.get("petsync_origin")
        for row in sheet.rows():
            cells = row.cells if sheet.petsync_written else tuple(map(unescape_cell, row.cells))
            number = _cell(cells, number_at).strip()
            of = _cell(cells, origin_at).strip()
            same = not origin or not of or of == origin
            if same and number.isdigit() and int(number) in replaced:
                continue
            yield [_cell(cells, where.get(column.strip())) for column in header]


def _cell(cells: Sequence[str], index: int | None) -> str:
    return cells[index] if index is not None and index < len(cells) else ""


def write_text_atomic(path: Path, text: str) -> None:
    """Write a small text file (the JSON report) atomically."""
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise _cannot_write(path, exc) from exc


def _cannot_write(path: Path, exc: OSError) -> PetsyncError:
    return PetsyncError(f"cannot write {path}: {exc.strerror or exc}")
