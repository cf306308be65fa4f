"""``--category-map FILE``: category names staff write, and the ids the API takes.

The interface takes a numeric ``categoryId`` and has no category endpoint, so the office
says once which word means which id: a CSV or spreadsheet with a name column (headed
``name``, ``category`` or ``category name``) and an id column (``categoryId`` or ``id``)::

    name,categoryId
    Dog,1
    Cat,2
    Guinea pig,7

A categoryId cell that is not an integer is looked up case- and space-insensitively
(``cat``, ``CAT`` and `` Cat `` are 2; ``guineapig`` is 7). The map is read and checked
before anything is sent: a blank name, an id that is not an integer in int64 range, or a
name given twice (even with the same id) stops the import (exit 2) naming the rows.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from petsync.core.errors import InputError
from petsync.core.settings_table import CATEGORY_MAP
from petsync.importer.columns import ColumnMap, category_key, match_key
from petsync.importer.header_row import HEADER_SCAN_ROWS
from petsync.importer.sheets.opening import open_spreadsheet
from petsync.importer.sheets.sheet import ReadOptions, Record
from petsync.importer.validation import parse_category_id

NAME_HEADERS = frozenset({"name", "category", "categoryname"})
ID_HEADERS = frozenset({"categoryid", "id"})
MAX_ENTRIES = 100_000  # categories in one map, at most: a map, not a catalogue
_SHOWN = 5  # problems named in the error, at most


def load_category_map(path: Path) -> tuple[dict[str, int], str]:
    """The ids of the map at ``path`` by :func:`~petsync.importer.columns.category_key`,
    and the name messages call it by; :class:`InputError` (exit 2) naming every problem."""
    where = f"category map {path}"
    if not path.is_file():  # say which file: the import's own sheet is another
        raise InputError(
            f"{where}: no such file; check "
            + CATEGORY_MAP
            + " (a path in a job file or petsync.toml is relative to that file); nothing "
            "was sent"
        )
    ids: dict[str, int] = {}
    rows_of: dict[str, int] = {}
    problems: list[str] = []
    with open_spreadsheet(path, ReadOptions()) as sheet:
        name_at, id_at = _columns(sheet.leading_rows(HEADER_SCAN_ROWS), where)
        sheet.use_header_row(name_at[0])
        for row in sheet.rows():
            if len(ids) >= MAX_ENTRIES:
                raise InputError(f"{where}: more than {MAX_ENTRIES} categories; is it the map?")
            cells = row.cells
            name = cells[name_at[1]].strip() if name_at[1] < len(cells) else ""
            text = cells[id_at] if id_at < len(cells) else ""
            value, error, _ = parse_category_id(text)
            if not name:
                problems.append(f"row {row.number}: the name is blank")
            elif error is not None:
                problems.append(f"row {row.number}: {name!r}: {error.message}")
            elif category_key(name) in rows_of:
                problems.append(
                    f"row {row.number}: {name!r} is named on row {rows_of[category_key(name)]} "
                    "too; name each category once"
                )
            else:
                assert value is not None
                ids[category_key(name)] = value
                rows_of[category_key(name)] = row.number
    if problems:
        shown = "; ".join(problems[:_SHOWN])
        more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
        raise InputError(f"{where}: {shown}{more}. Fix the map; nothing was sent")
    if not ids:
        raise InputError(f"{where}: the map names no category; nothing was sent")
    return ids, path.name


def with_category_map(columns: ColumnMap, path: Path | None) -> ColumnMap:
    """``columns`` reading category names through the map at ``path`` (None: no map)."""
    if path is None:
        return columns
    ids, name = load_category_map(path)
    return replace(columns, category_names=ids, category_map_name=name)


def _columns(leading: list[Record], where: str) -> tuple[tuple[int, int], int]:
    """((header row, name column), id column) of the map's first row that has both."""
    for number, cells, _ in leading:
        keys = [match_key(cell) for cell in cells]
        names = [i for i, key in enumerate(keys) if key in NAME_HEADERS]
        ids = [i for i, key in enumerate(keys) if key in ID_HEADERS]
        if names and ids:
            return (number, names[0]), ids[0]
    found = ", ".join(repr(c) for c in leading[0][1]) if leading else "none"
    raise InputError(
        f"{where}: needs a name column (headed name or category) and an id column (headed "
        f"categoryId or id) in one of its first {HEADER_SCAN_ROWS} rows; row 1 holds: {found}"
    )
