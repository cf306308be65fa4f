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

Each failure has a code, the field and a message saying what to fix. Each leniency used
is counted as a normalisation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from petsync.core.models import INT64_MAX, INT64_MIN, STATUS_VALUES, NewPet, PetStatus
from petsync.importer.columns import ColumnMap
from petsync.importer.spreadsheet import CELL_LIMIT, CutCell


class ErrorCode(StrEnum):
    """Codes of local validation failures, as written in ``petsync_error_code``."""

    NAME_MISSING = "name_missing"
    CATEGORY_MISSING = "category_missing"
    CATEGORY_NOT_INTEGER = "category_not_integer"
    CATEGORY_OUT_OF_RANGE = "category_out_of_range"
    STATUS_INVALID = "status_invalid"
    EXTRA_CELLS = "extra_cells"
    CELL_TOO_LONG = "cell_too_long"
    FORMULA_WITHOUT_VALUE = "formula_without_value"
    ROW_ORIGIN_MISSING = "row_origin_missing"  # a fed-back row with no petsync_row
    ROW_ORIGIN_OTHER = "row_origin_other"  # a fed-back row of another first file
    ROW_REPEATED = "row_repeated"  # a fed-back row whose petsync_row is held by an earlier row


class Normalisation(StrEnum):
    """Leniencies applied to a valid row, counted in the summary."""

    TRIMMED = "trimmed"
    STATUS_CASE_FOLDED = "status_case_folded"
    INTEGRAL_DECIMAL = "integral_decimal"


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
    the check pass found wrong with the row as a whole (see
    :meth:`~petsync.importer.check.CheckedInput.problems_of`); they reject it too.
    """
    errors: list[FieldError] = [*problems, *(_too_long(cell, columns) for cell in cut)]
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
        if folded in STATUS_VALUES:
            status = PetStatus(folded)
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
        errors.append(
            FieldError(
                ErrorCode.EXTRA_CELLS,
                None,
                f"the row has {len(cells)} cells but the header has {width} columns "
                f"(extra: {', '.join(repr(c) for c in extra)}); a cell probably holds an "
                "unquoted delimiter",
            )
        )
    if errors:
        return Validated(None, tuple(errors), ())
    if trimmed:
        normalised.insert(0, Normalisation.TRIMMED)
    assert category is not None  # no category error means a value
    return Validated(NewPet(name=name, categoryId=category, status=status), (), tuple(normalised))


def _too_long(cell: CutCell, columns: ColumnMap) -> FieldError:
    field = {columns.name: "name", columns.categoryId: "categoryId"}.get(cell.column)
    if field is None and cell.column == columns.status:
        field = "status"
    size = f"{cell.length} characters, more" if cell.length >= 0 else "more characters"
    return FieldError(
        ErrorCode.CELL_TOO_LONG,
        field,
        f"column {cell.column + 1} holds {size} than the {CELL_LIMIT} a cell may hold; the "
        "reject file keeps only its start: replace it with the real (shorter) value",
    )
