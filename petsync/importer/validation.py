"""Checking one spreadsheet row against the interface's rules before anything is sent.

The rules (interface, NewPet): ``name`` is required and must not be blank once trimmed;
``categoryId`` is required and an integer in int64 range; ``status`` is optional and one
of ``available``, ``pending``, ``sold``. petsync is lenient only where the meaning is
certain:

- surrounding spaces are trimmed from all three cells;
- ``categoryId`` accepts an optional sign, digits, and a decimal part made only of zeros
  (``12``, `` 12 ``, ``+12``, ``12.0`` mean 12). It is parsed as text, never through a
  float, so 19-digit values stay exact. ``12.5``, ``1.2E+5``, ``12,0`` and ``abc`` are
  rejected;
- ``status`` is compared case-insensitively (``Available`` is sent as ``available``); a
  blank status is not sent.

A cell holding a control character (C0 other than tab, line feed and carriage return;
DEL; C1; a lone surrogate) rejects its row (``control_character``), whatever its column:
such bytes are a damaged file, never a name, and nothing holding one is sent.

Each failure has a code, the field and a message saying what to fix. Each leniency used
is counted as a normalisation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from petsync.core.interface import CELL_LIMIT, ROW_CELL_LIMIT, ROW_CHAR_LIMIT
from petsync.core.models import INT64_MAX, INT64_MIN, STATUS_VALUES, NewPet, PetStatus
from petsync.core.text import shown_text
from petsync.importer.columns import ColumnMap, category_key
from petsync.importer.sheets.cell_problems import cell_problem_code
from petsync.importer.sheets.sheet import CutCell, column_letters


class ErrorCode(StrEnum):
    """Codes of local validation failures, as written in ``petsync_error_code``."""

    NAME_MISSING = "name_missing"
    CATEGORY_MISSING = "category_missing"
    CATEGORY_NOT_INTEGER = "category_not_integer"
    CATEGORY_OUT_OF_RANGE = "category_out_of_range"
    CATEGORY_UNKNOWN = "category_unknown"  # a name the category map does not hold
    STATUS_INVALID = "status_invalid"
    EXTRA_CELLS = "extra_cells"
    CELL_TOO_LONG = "cell_too_long"
    FORMULA_WITHOUT_VALUE = "formula_without_value"
    NUMBER_NOT_EXACT = "number_not_exact"  # a workbook number past 2**53 held as a double
    ROW_ORIGIN_MISSING = "row_origin_missing"  # a fed-back row with no petsync_row
    ROW_ORIGIN_OTHER = "row_origin_other"  # a fed-back row of another first file
    ROW_REPEATED = "row_repeated"  # a fed-back row whose petsync_row is held by an earlier row
    ROW_TOO_WIDE = "row_too_wide"
    ROW_TOO_LONG = "row_too_long"
    CONTROL_CHARACTER = "control_character"


class Normalisation(StrEnum):
    """Leniencies applied to a valid row, counted in the summary."""

    TRIMMED = "trimmed"
    STATUS_CASE_FOLDED = "status_case_folded"
    INTEGRAL_DECIMAL = "integral_decimal"
    CATEGORY_NAMED = "category_named"  # a category name read through the category map


@dataclass(frozen=True)
class FieldError:
    """One reason a row cannot be sent. ``field`` is None when no single field is at fault."""

    code: str
    field: str | None
    message: str


@dataclass(frozen=True)
class Validated:
    """The outcome for one row: a NewPet to send, or the errors; and what was normalised."""

    pet: NewPet | None
    errors: tuple[FieldError, ...]
    normalisations: tuple[Normalisation, ...]


# Sign, ASCII digits, then optionally a point and zeros only. \d is avoided on purpose:
# it matches other scripts' digits, which int() would accept.
_INTEGER = re.compile(r"([+-]?)([0-9]+)(?:\.0+)?")
# int64 has at most 19 digits; anything much longer is out of range without parsing it.
_MAX_DIGITS = 40
# Control characters a cell may not hold (tab, LF and CR may: multi-line cells), and lone
# surrogates, which no UTF-8 writer can encode.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
# Extra cells named in an extra_cells message, at most.
_EXTRA_SHOWN = 3
# A status by its value: a dict lookup costs a fraction of the enum's call, on every row.
_STATUSES = {status.value: status for status in PetStatus}


def parse_category_id(text: str) -> tuple[int | None, FieldError | None, bool]:
    """Parse a categoryId cell: (value, error, used_integral_decimal).

    >>> parse_category_id(" 12.0 ")[0], str(parse_category_id("12.5")[1].code)
    (12, 'category_not_integer')
    """
    stripped = text.strip()
    if not stripped:
        return (
            None,
            FieldError(ErrorCode.CATEGORY_MISSING, "categoryId", "categoryId is blank"),
            False,
        )
    match = _INTEGER.fullmatch(stripped)
    if match is None:
        return (
            None,
            FieldError(
                ErrorCode.CATEGORY_NOT_INTEGER,
                "categoryId",
                f"categoryId {stripped!r} is not a whole number; write it as digits "
                "only, like 12 (no decimals, exponents or separators; in Excel, store "
                "long ids as text)",
            ),
            False,
        )
    sign, digits = match.group(1), match.group(2).lstrip("0") or "0"
    value = None if len(digits) > _MAX_DIGITS else int(sign + digits)
    if value is None or not INT64_MIN <= value <= INT64_MAX:
        return (
            None,
            FieldError(
                ErrorCode.CATEGORY_OUT_OF_RANGE,
                "categoryId",
                f"categoryId {stripped!r} is outside the int64 range {INT64_MIN}..{INT64_MAX}",
            ),
            False,
        )
    return value, None, "." in stripped


_UNREAD_CELL = frozenset({ErrorCode.FORMULA_WITHOUT_VALUE, ErrorCode.NUMBER_NOT_EXACT})


def cell_errors(
    problems: Sequence[tuple[int, str]], line: int, header: Sequence[str], columns: ColumnMap
) -> tuple[FieldError, ...]:
    """The errors of the cells of row ``line`` that the reader could not read as the sheet
    shows them (a workbook's formula without a value, a number past 2**53 held only as a
    double): ``problems`` as (0-based column, why)."""
    found = []
    for column, why in problems:
        title = header[column] if column < len(header) else ""
        where = f"cell {column_letters(column)}{line}" + (f" ({title})" if title else "")
        code = ErrorCode(cell_problem_code(why))
        found.append(FieldError(code, columns.field_at(column), f"{where} {why}"))
    return tuple(found)


def validate_row(
    cells: Sequence[str],
    columns: ColumnMap,
    width: int,
    cut: Sequence[CutCell] = (),
    problems: Sequence[FieldError] = (),
) -> Validated:
    """Validate the cells of one row; ``width`` is the number of header columns.

    ``cut`` lists cells the reader cut because they were over the cell limit: such a row
    is rejected (``cell_too_long``) whatever column the cell is in. ``problems`` are what
    the check found wrong with the row as a whole (a cell that cannot be read, a fix row of
    no known identity); they reject it too.
    """
    errors: list[FieldError] = [*problems, *(_too_long(cell, columns) for cell in cut)]
    control = _control_error(cells, columns)
    if control is not None:
        errors.append(control)
    normalised: list[Normalisation] = []
    trimmed = False

    def cell(index: int | None) -> str:
        return cells[index] if index is not None and index < len(cells) else ""

    raw_name = cell(columns.name)
    name = raw_name.strip()
    if not name:
        errors.append(FieldError(ErrorCode.NAME_MISSING, "name", "name is blank"))
    trimmed |= bool(name) and name != raw_name

    raw_category = cell(columns.categoryId)
    category, category_error, integral = parse_category_id(raw_category)
    if category_error is not None and category_error.code == ErrorCode.CATEGORY_NOT_INTEGER:
        category, category_error = _category_by_name(raw_category.strip(), columns)
        if category is not None:
            normalised.append(Normalisation.CATEGORY_NAMED)
    if category_error is not None:
        errors.append(category_error)
    else:
        trimmed |= raw_category.strip() != raw_category
        if integral:
            normalised.append(Normalisation.INTEGRAL_DECIMAL)

    raw_status = cell(columns.status)
    status_text = raw_status.strip()
    status: PetStatus | None = None
    if status_text:
        folded = status_text.casefold()
        status = _STATUSES.get(folded)
        if status is not None:
            trimmed |= status_text != raw_status
            if folded != status_text:
                normalised.append(Normalisation.STATUS_CASE_FOLDED)
        else:
            errors.append(
                FieldError(
                    ErrorCode.STATUS_INVALID,
                    "status",
                    f"status {status_text!r} is not one of {', '.join(STATUS_VALUES)} "
                    "(or leave it blank)",
                )
            )

    extra = [c for c in cells[width:] if c.strip()]
    if extra:
        shown = ", ".join(repr(shown_text(c, 40)) for c in extra[:_EXTRA_SHOWN])
        if len(extra) > _EXTRA_SHOWN:
            shown += f" and {len(extra) - _EXTRA_SHOWN} more"
        errors.append(
            FieldError(
                ErrorCode.EXTRA_CELLS,
                None,
                f"the row has {len(cells)} cells but the header has {width} columns "
                f"(extra: {shown}); a cell probably holds an unquoted delimiter",
            )
        )
    # A cell the reader could not read as shown (a formula with no value, an inexact
    # number) has said why: "is blank" or "not a whole number" on top would misdirect.
    unread = {p.field for p in problems if p.code in _UNREAD_CELL and p.field is not None}
    if unread:
        errors = [e for e in errors if e in problems or e.field not in unread]
    if errors:
        return Validated(None, tuple(errors), ())
    if trimmed:
        normalised.insert(0, Normalisation.TRIMMED)
    assert category is not None  # no category error means a value
    return Validated(NewPet(name=name, categoryId=category, status=status), (), tuple(normalised))


def _category_by_name(text: str, columns: ColumnMap) -> tuple[int | None, FieldError | None]:
    """A categoryId cell that is no integer, looked up in the ``--category-map``; the error
    names the map, or (with none, for a word) the option that gives one."""
    names = columns.category_names
    if names is not None:
        found = names.get(category_key(text))
        if found is not None:
            return found, None
        unknown = FieldError(
            ErrorCode.CATEGORY_UNKNOWN,
            "categoryId",
            f"category {text!r} is not in the category map "
            f"{columns.category_map_name}; add it there with its id, or write the id as digits",
        )
        return None, unknown
    advice = (
        "write it as digits only, like 12 (no decimals, exponents or separators; in Excel, "
        "store long ids as text)"
    )
    if any(char.isalpha() for char in text) and not _NUMBER_LIKE.fullmatch(text):
        advice = (
            # Written to the reject file, whoever reads it: the setting is described, not
            # named in one caller's terms.
            "write the category's id as digits, like 12, or give the import a category "
            "map (a sheet of name and categoryId) to read category names"
        )
    message = f"categoryId {text!r} is not a whole number; {advice}"
    return None, FieldError(ErrorCode.CATEGORY_NOT_INTEGER, "categoryId", message)


# A number in a form the categoryId check refuses (12.5, 1.2E+5, 1e20): no category name.
_NUMBER_LIKE = re.compile(r"[+-]?[0-9.,]+(?:[eE][+-]?[0-9]+)?")


def _field_of(column: int, columns: ColumnMap) -> str | None:
    field = {columns.name: "name", columns.categoryId: "categoryId"}.get(column)
    if field is None and column == columns.status:
        field = "status"
    return field


def _control_error(cells: Sequence[str], columns: ColumnMap) -> FieldError | None:
    """The first control character in the row's cells, as an error; None if there is none."""
    if _CONTROL.search("".join(cells)) is None:  # one scan for the usual, clean row
        return None
    for column, text in enumerate(cells):
        found = _CONTROL.search(text)
        if found is not None:
            return FieldError(
                ErrorCode.CONTROL_CHARACTER,
                _field_of(column, columns),
                f"column {column + 1} holds the control character "
                f"{shown_text(found.group())} at character {found.start() + 1}; a damaged "
                "or binary file? Retype the cell, or save the sheet again as CSV UTF-8",
            )
    return None  # pragma: no cover - the joined search found one


def visible_controls(cells: Sequence[str]) -> list[str]:
    r"""``cells`` with each control character written as its escape (``\x00``), for the
    reject file: a fed-back reject file must not hold the bytes that rejected it.

    >>> visible_controls(["Re\x00x", "1"])
    ['Re\\x00x', '1']
    """
    return [_CONTROL.sub(lambda m: shown_text(m.group()), cell) for cell in cells]


def _too_long(cell: CutCell, columns: ColumnMap) -> FieldError:
    if cell.kind == "row_cells":
        return FieldError(
            ErrorCode.ROW_TOO_WIDE,
            None,
            f"the row has {cell.length} cells, more than the {ROW_CELL_LIMIT} a row may hold; "
            "the reject file keeps only its start: a delimiter run wild? Remove the empty "
            "cells at its end",
        )
    if cell.kind == "row_chars":
        return FieldError(
            ErrorCode.ROW_TOO_LONG,
            None,
            f"the row holds {cell.length} characters, more than the {ROW_CHAR_LIMIT} a row "
            f"may hold (from column {cell.column + 1} on, the reject file keeps only the start "
            "of each cell): shorten its cells",
        )
    field = _field_of(cell.column, columns)
    size = f"{cell.length} characters, more" if cell.length >= 0 else "more characters"
    return FieldError(
        ErrorCode.CELL_TOO_LONG,
        field,
        f"column {cell.column + 1} holds {size} than the {CELL_LIMIT} a cell may hold; the "
        "reject file keeps only its start: replace it with the real (shorter) value",
    )
