"""One sheet of a workbook read by calamine: the sheet chosen by name, its cell values.

The one place calamine's exceptions for damaged files (zip, XML, its own errors) become an
:class:`InputError`. An .xlsx or .xlsm sheet is measured first: its used range
(:mod:`.sheet_range`) and the bytes its shared strings would take in its cells
(:mod:`.shared_strings`); an .ods is measured before this is called (:mod:`.ods_content`);
this runs in a child process for .xls and .xlsb (:mod:`.isolated_read`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from petsync.core.errors import InputError
from petsync.importer.sheets.inflating import UnmeasuredWorkbook
from petsync.importer.sheets.shared_strings import (
    check_shared_string_uses,
    measure_shared_strings,
)
from petsync.importer.sheets.sheet_range import (
    MEASURED_SUFFIXES,
    UsedRange,
    check_sheet_range,
    check_used_range,
)

_T = TypeVar("_T")


def read_sheet_values(
    path: Path, sheet_name: str | None, name: str | None = None, *, check_grid: bool = False
) -> tuple[str, list[list[Any]]]:
    """The chosen sheet's name (the first worksheet by default) and its rows of values.

    ``name`` is what to open (a name leading to the checked descriptor, :mod:`.held`); the
    path by default. The measures below take it too.

    ``check_grid``: refuse a grid past the limits once calamine holds it (in the child
    process of :mod:`.isolated_read`, where a file the measures cannot read through is
    read all the same). In this process such a file raises :class:`UnmeasuredWorkbook`
    before calamine opens it, and the caller reads it in the child.
    """
    # calamine raises several kinds of exceptions for damaged files (zip, XML, its own
    # errors): this is the one place they become an InputError.
    try:
        from python_calamine import CalamineWorkbook

        # calamine reads the shared strings when it opens the workbook: counted first.
        strings = _measured(measure_shared_strings, path, name, within_limits=check_grid)
        workbook = CalamineWorkbook.from_path(name or str(path))
        names = list(workbook.sheet_names)
        worksheets = [
            meta.name for meta in workbook.sheets_metadata if "WorkSheet" in str(meta.typ)
        ]
        if sheet_name is None:
            if not worksheets:
                raise InputError(f"{path}: the workbook has no worksheet")
            chosen = worksheets[0]
        elif sheet_name in names:
            chosen = sheet_name
        else:
            shown = ", ".join(repr(n) for n in names)
            raise InputError(f"{path}: no sheet named {sheet_name!r}; sheets found: {shown}")
        # calamine holds the sheet as a grid from A1 to its last value: measured first, so a
        # far cell is refused here instead of aborting the process (sheet_range).
        used = check_sheet_range(path, chosen, name)
        if used is None and path.suffix.lower() in MEASURED_SUFFIXES and not check_grid:
            raise UnmeasuredWorkbook("the used range was not measured")
        _measured(check_shared_string_uses, path, chosen, strings, name, within_limits=check_grid)
        grid = workbook.get_sheet_by_name(chosen)
        if check_grid and grid.end is not None:
            check_used_range(path, chosen, UsedRange(grid.end[0] + 1, grid.end[1] + 1))
        # Padded from A1, so list positions are the row and column numbers a person sees.
        values = grid.to_python(skip_empty_area=False)
    except (InputError, UnmeasuredWorkbook):
        raise
    except Exception as exc:
        raise InputError(
            f"{path}: cannot open the workbook ({type(exc).__name__}: {exc}); check it opens "
            "in Excel or LibreOffice and is saved as .xlsx, .xls, .xlsb or .ods"
        ) from exc
    return chosen, values


def _measured(measure: Callable[..., _T], *args: Any, within_limits: bool) -> _T | None:
    """``measure(*args)``; where it cannot read the file through, None in the child process
    (its memory limit bounds the reader) and :class:`UnmeasuredWorkbook` in this one."""
    try:
        return measure(*args)
    except UnmeasuredWorkbook:
        if within_limits:
            return None
        raise
