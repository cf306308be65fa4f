"""Fields the API sends beyond the interface's: noticed, counted, and dropped, kept or refused.

The interface names four fields of a Pet (:data:`~petsync.core.interface.PET_FIELDS`); a
real service grows more. The decoder carries each record's other fields along as JSON text
(:attr:`~petsync.client.records.PetColumns.extras`); this module turns them into facts and
columns:

* :class:`FieldTally` counts, over the pets written, each extra field: how many pets carried
  it, the JSON types seen, one example value.
* :func:`choose_column` gives a field its column type the first night it is kept, from the
  JSON types seen that night, so that every value of that night fits; from then on the type
  is the one the previous snapshot's manifest names (:func:`fixed_columns`), and a pet whose
  value does not fit is quarantined with the reason (:func:`misfit_reason`), never coerced.
* :class:`ExtraFieldsReport` compares the night's fields with the previous snapshot's and
  says what to do, once, the night the set changes.

Column types: ``string``, ``int64`` (exact), ``float64`` (an integer fits when a double holds
it exactly, up to 2**53), ``bool``, and ``json`` (any value as its JSON text: objects,
arrays, and fields whose values mix types). A JSON null is a null in any column.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from petsync.client.records import InvalidRecord, PetColumns
from petsync.core.models import INT64_MAX, INT64_MIN
from petsync.core.settings_table import EXTRA_FIELDS
from petsync.core.wording import Said
from petsync.export.config import ExtraFieldsMode
from petsync.formats.schema import ARROW_TYPES, COLUMN_TYPES, ColumnType, recorded_fields

EXAMPLE_MAX_CHARS = 200  # an example value longer than this (as JSON) is cut in the manifest
_FLOAT_EXACT = 2**53  # the largest integer range a double holds exactly


def json_type(value: object) -> str:
    """The JSON type of a decoded value: string, integer, number, boolean, object, array, null.

    >>> [json_type(v) for v in ("a", 1, 1.5, True, {}, [], None)]
    ['string', 'integer', 'number', 'boolean', 'object', 'array', 'null']
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    return "array"


def fits(value: object, column: ColumnType) -> bool:
    """True when ``value`` goes into a column of type ``column`` without losing anything.

    >>> fits(3, "float64"), fits(2**60 + 1, "float64"), fits("3", "int64"), fits(None, "bool")
    (True, False, False, True)
    """
    if value is None or column == "json":
        return True
    kind = type(value)
    if column == "string":
        return kind is str
    if column == "bool":
        return kind is bool
    if column == "int64":
        return kind is int and INT64_MIN <= value <= INT64_MAX  # type: ignore[operator]
    return kind is float or (kind is int and -_FLOAT_EXACT <= value <= _FLOAT_EXACT)  # type: ignore[operator]


@dataclass
class FieldStats:
    """One extra field over the pets written: how many carried it, its JSON types, an example."""

    name: str
    pets: int = 0
    json_types: set[str] = field(default_factory=set)
    example: object = None
    fits_int64: bool = True  # every integer seen fits int64
    fits_float64: bool = True  # every integer seen is exact as a double

    def add(self, value: object) -> None:
        self.pets += 1
        kind = json_type(value)
        self.json_types.add(kind)
        if self.example is None:
            self.example = value
        if kind == "integer":
            self.fits_int64 = self.fits_int64 and fits(value, "int64")
            self.fits_float64 = self.fits_float64 and fits(value, "float64")


class FieldTally:
    """Counts the extra fields of the pets written, from each row's extra-fields JSON text."""

    def __init__(self) -> None:
        self.fields: dict[str, FieldStats] = {}

    def add(self, text: str) -> dict[str, Any]:
        """Count one row's extra fields; return them decoded."""
        values: dict[str, Any] = json.loads(text)
        for name, value in values.items():
            stats = self.fields.get(name)
            if stats is None:
                stats = self.fields[name] = FieldStats(name)
            stats.add(value)
        return values


def choose_column(stats: FieldStats) -> ColumnType:
    """A new field's column type: the narrowest that holds every value seen the first night.

    >>> tally = FieldTally(); _ = tally.add('{"w": 3}'); _ = tally.add('{"w": 4.5}')
    >>> choose_column(tally.fields["w"])
    'float64'
    """
    kinds = stats.json_types - {"null"}
    if not kinds or kinds == {"string"}:
        return "string"
    if kinds == {"boolean"}:
        return "bool"
    if kinds == {"integer"} and stats.fits_int64:
        return "int64"
    if kinds <= {"integer", "number"} and stats.fits_float64:
        return "float64"
    return "json"


def misfit_reason(name: str, value: object, column: ColumnType) -> str:
    """The quarantine reason of a pet whose extra field does not fit the field's column.

    >>> misfit_reason("weightKg", "12kg", "float64")[:71]
    'extra field weightKg is string "12kg", which does not fit its float64 c'
    """
    return (
        f"extra field {name} is {json_type(value)} {_shown(value)}, which does not fit its "
        f"{column} column (its type in the previous snapshot); petsync never casts. If the API "
        "changed the field's type, export one night with extra fields dropped to let the "
        "next kept night choose the type again"
    )


def screen(
    pets: PetColumns, columns: Mapping[str, ColumnType], url: str
) -> tuple[PetColumns, list[InvalidRecord]] | None:
    """Take out the pets whose kept extra field does not fit its column; None if none is.

    Each one becomes an :class:`~petsync.client.records.InvalidRecord` (the record as sent,
    the reason) for the quarantine.
    """
    extras = pets.extras
    if extras is None or not columns:
        return None
    keep: list[bool] = []
    invalid: list[InvalidRecord] = []
    for row, text in enumerate(extras):
        reason = None
        if text is not None:
            values = json.loads(text)
            for name, value in values.items():
                column = columns.get(name)
                if column is not None and not fits(value, column):
                    reason = misfit_reason(name, value, column)
                    break
        keep.append(reason is None)
        if reason is not None:
            record: dict[str, Any] = {
                "id": pets.ids[row],
                "name": pets.names[row],
                "categoryId": pets.categories[row],
            }
            if pets.statuses[row] is not None:
                record["status"] = pets.statuses[row]
            invalid.append(InvalidRecord(record={**record, **values}, reason=reason, url=url))
    if not invalid:
        return None
    return pets.where(keep), invalid


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."


def arrow_column(values: list[object], column: ColumnType) -> pa.Array:
    """Values (None for a pet without the field) as an Arrow array of the column's type."""
    if column == "json":
        values = [
            None if v is None else json.dumps(v, ensure_ascii=False, separators=(",", ":"))
            for v in values
        ]
    elif column == "float64":
        values = [None if v is None else float(v) for v in values]  # type: ignore[arg-type]
    return pa.array(values, ARROW_TYPES[column])


def fixed_columns(previous: Mapping[str, Any] | None) -> dict[str, ColumnType]:
    """The extra fields the previous snapshot kept as columns, with their types.

    A field that was null on every pet that night fixes no type (its column was text only
    because a column needs a type): the next night chooses.
    """
    columns: dict[str, ColumnType] = {}
    for entry in recorded_fields(previous).values():
        column = entry.get("column")
        seen = entry.get("json_types")
        if column in COLUMN_TYPES and isinstance(seen, list) and set(seen) - {"null"}:
            columns[str(entry["name"])] = column
    return columns


@dataclass(frozen=True)
class ExtraField:
    """One extra field as the manifest records it."""

    name: str
    pets: int
    json_types: tuple[str, ...]
    example: object
    first_seen: str  # the date of the first snapshot in an unbroken run of nights with it
    column: ColumnType | None  # its column type when kept, else None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pets": self.pets,
            "json_types": list(self.json_types),
            "example": _example(self.example),
            "first_seen": self.first_seen,
            "column": self.column,
        }


def _example(value: object) -> object:
    """The example as the manifest holds it: strict JSON, cut to its text when long."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN or Infinity: kept as text
        return json.dumps(value, ensure_ascii=False)
    if len(text) <= EXAMPLE_MAX_CHARS:
        return value
    return text[: EXAMPLE_MAX_CHARS - 3] + "..."


@dataclass(frozen=True)
class ExtraFieldsReport:
    """The night's extra fields, what became of them, and how they differ from the previous
    snapshot's (``previous_date`` None: there is none to compare with, or it predates this)."""

    mode: ExtraFieldsMode
    fields: tuple[ExtraField, ...] = ()
    previous_date: str | None = None
    appeared: tuple[str, ...] = ()
    disappeared: tuple[str, ...] = ()
    retyped: tuple[str, ...] = ()  # fields whose JSON types (null aside) differ from before

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    @property
    def changed(self) -> bool:
        """True the night the set of extra fields (or a field's JSON types) changed."""
        return bool(self.appeared or self.disappeared or self.retyped)

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "fields": [f.to_json() for f in self.fields],
            "compared_with": self.previous_date,
            "appeared": list(self.appeared),
            "disappeared": list(self.disappeared),
            "types_changed": list(self.retyped),
        }

    def warnings(self) -> list[Said]:
        """One warning the night the set changes (none on a quiet night)."""
        if not self.changed:
            return []
        parts: list[str] = []
        if self.appeared:
            parts.append("new fields " + self._described(self.appeared))
        if self.retyped:
            parts.append("fields whose JSON types changed " + self._described(self.retyped))
        if self.disappeared:
            parts.append(
                "fields no longer sent: "
                + ", ".join(self.disappeared)
                + f" (in the snapshot of {self.previous_date})"
            )
        then: Said = " " + self.what_happens() if self.appeared or self.retyped else ""
        return ["The API's pets changed shape: " + "; ".join(parts) + "." + then]

    def _described(self, names: Iterable[str]) -> str:
        by_name = {f.name: f for f in self.fields}
        return ", ".join(
            f"{n} ({'/'.join(by_name[n].json_types)}, on {by_name[n].pets} pets)" for n in names
        )

    def what_happens(self) -> Said:
        """What this run did with the extra fields, and the setting that changes it."""
        if self.mode == "keep":
            return (
                "They are kept as columns after the interface's ("
                + EXTRA_FIELDS.given("keep")
                + "); see the manifest's extra_fields."
            )
        return (
            "They were dropped ("
            + EXTRA_FIELDS.given("drop")
            + ", the default); pass "
            + EXTRA_FIELDS.given("keep")
            + " to keep them as columns, or "
            + EXTRA_FIELDS.given("fail")
            + " to refuse such a night."
        )

    def summary(self) -> Said | None:
        """One line for every night with extra fields (quiet nights included), else None."""
        if not self.fields:
            return None
        if self.mode != "keep":
            return (
                f"extra fields: {', '.join(self.names)}: dropped ("
                + EXTRA_FIELDS.given("drop")
                + ")"
            )
        clashing = [f.name for f in self.fields if f.column is None]
        kept = [f.name for f in self.fields if f.column is not None]
        line = f"extra fields: {', '.join(kept) or '-'}: kept as columns"
        if clashing:
            line += (
                f"; not {', '.join(clashing)}: a column of that name, ignoring case, exists "
                "(in the manifest only)"
            )
        return line


def summarise(
    mode: ExtraFieldsMode,
    tally: FieldTally,
    columns: Mapping[str, ColumnType],
    *,
    today: dt.date,
    previous: Mapping[str, Any] | None,
    previous_date: dt.date | None,
) -> ExtraFieldsReport:
    """The night's report: each field's facts, its first night, and the change from before."""
    before = recorded_fields(previous)
    fields = []
    for name in sorted(tally.fields):
        stats = tally.fields[name]
        earlier = before.get(name, {}).get("first_seen")
        fields.append(
            ExtraField(
                name=name,
                pets=stats.pets,
                json_types=tuple(sorted(stats.json_types)),
                example=stats.example,
                first_seen=earlier if isinstance(earlier, str) else today.isoformat(),
                column=columns.get(name),
            )
        )
    if previous is None:
        # No snapshot before this one: every field is new tonight.
        return ExtraFieldsReport(mode, tuple(fields), None, tuple(f.name for f in fields))
    now = {f.name: f for f in fields}
    # A field null on some pets one night and on none the next has not changed type.
    retyped = tuple(
        name
        for name, field_ in now.items()
        if name in before
        and set(before[name].get("json_types") or []) - {"null"}
        != set(field_.json_types) - {"null"}
    )
    return ExtraFieldsReport(
        mode=mode,
        fields=tuple(fields),
        previous_date=previous_date.isoformat() if previous_date else None,
        appeared=tuple(n for n in now if n not in before),
        disappeared=tuple(sorted(n for n in before if n not in now)),
        retyped=retyped,
    )
