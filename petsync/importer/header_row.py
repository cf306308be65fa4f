"""Which row of a sheet is its header: row 1, or the first of the first 20 that names the fields.

Staff sheets often start with a title ("April arrivals", merged across the columns), a note
or blank rows, then the header. The header is the first row, within the first
:data:`HEADER_SCAN_ROWS`, whose cells name the fields as the column matching does
(:func:`~petsync.importer.columns.resolve_columns`: ``name`` and ``categoryId`` by header
or ``--map``). Row 1, when it names them, is the header without looking further (as
always). Otherwise exactly one such row must exist: two are ambiguous and stop the import
(exit 2) naming them, with ``--header-row N`` to say which; none stops it with the
column-matching error of the row that came closest. Rows above the header are skipped;
row numbers stay the sheet's own. The check stage asks (whether row 1 names the fields,
then :func:`find_header_row` of the first rows) and makes the sheet use the row found; what
naming the fields means is the column matching's (:mod:`petsync.importer.columns`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from petsync.core.errors import InputError
from petsync.core.settings_table import HEADER_ROW
from petsync.core.wording import Placeholder
from petsync.importer.columns import closest_to_fields, names_fields, resolve_columns
from petsync.importer.sheets.sheet import Record

HEADER_SCAN_ROWS = 20


def find_header_row(leading: Sequence[Record], mappings: Sequence[str], path: Path) -> int:
    """The header's row number among ``leading``, the first rows of the sheet (see the
    module docstring); raise :class:`InputError` when none or two name the fields."""
    found = [
        number for number, cells, cut in leading if not cut and names_fields(cells, mappings, path)
    ]
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        rows = ", ".join(map(str, found[:-1])) + f" and {found[-1]}"
        raise InputError(
            f"{path}: cannot tell the header row: rows {rows} each name the fields "
            "(name, categoryId); pass "
            + HEADER_ROW.given(Placeholder("N"))
            + " with the one that heads the rows to import"
        )
    # The row with most cells naming a field (the first non-blank row when none does):
    # its column-matching error says what is missing.
    best = closest_to_fields([cells for _, cells, _ in leading], mappings)
    if best is not None:
        closest = leading[best]
    else:
        closest = next((r for r in leading if any(c.strip() for c in r[1])), leading[0])
    try:
        resolve_columns(closest[1], mappings, path)
    except InputError as exc:
        where = (
            f"no row of the first {HEADER_SCAN_ROWS} names the fields"
            if closest[0] == 1
            else f"in row {closest[0]}, the closest to a header of the first {HEADER_SCAN_ROWS}"
        )
        raise InputError(
            exc.words
            + f" ({where}; to read another row as the header, pass "
            + HEADER_ROW.given(Placeholder("N"))
            + ")"
        ) from exc
    return closest[0]  # names the fields, only with a cut cell: the header's check says that
