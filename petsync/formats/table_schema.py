"""A table's schema as petsync writes it, and the guard that refuses any other.

A night in a table has the snapshot's columns (:mod:`petsync.formats.schema`), then its date
(the partition column), then the kept extra fields in the order they were first kept. A table
whose columns, types or partitioning differ is refused, never cast; a kept field whose values
no longer fit its column is refused too: a table's schema evolves by new columns only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from petsync.core.errors import ConfigError
from petsync.core.settings_table import EXTRA_FIELDS, OUT
from petsync.formats.schema import (
    ARROW_TYPES,
    PET_SCHEMA,
    ColumnType,
    extra_columns,
    output_schema,
    recorded_fields,
)
from petsync.storage.layout import PARTITION_KEY

# A night in a table: the snapshot's columns, then its date (the partition column).
DATED_SCHEMA: pa.Schema = PET_SCHEMA.append(pa.field(PARTITION_KEY, pa.date32(), nullable=False))


def dated_schema(columns: Mapping[str, ColumnType]) -> pa.Schema:
    """A night's schema: the snapshot's columns, the date, then the kept extra fields."""
    schema = DATED_SCHEMA
    extra = output_schema(columns)
    for index in range(len(PET_SCHEMA), len(extra)):
        schema = schema.append(extra.field(index))
    return schema


def night_columns(data: pa.Table, manifest: dict[str, Any]) -> pa.Table:
    """A night read from a table, without the partition column and with only the extra-field
    columns that night kept (as its Parquet snapshot would hold them): the table's schema
    holds every column kept so far, so a field gone tonight would still look present."""
    kept = {n for n, e in recorded_fields(manifest).items() if e.get("column") is not None}
    gone = [n for n in extra_columns(data.schema) if n != PARTITION_KEY and n not in kept]
    return data.drop_columns([PARTITION_KEY, *gone])


def schema_differences(actual: list[tuple[str, str]]) -> list[str]:
    """How columns (name, type) differ from petsync's table schema, one phrase each.

    >>> schema_differences([("id", "int32"), ("name", "string"), ("categoryId", "int64"),
    ...                     ("status", "string"), ("snapshot_date", "date32[day]"), ("x", "int8")])
    ['column id is int32, petsync writes int64', 'an extra column x (int8)']
    """
    expected = [(f.name, str(f.type)) for f in DATED_SCHEMA]
    wanted, found = dict(expected), dict(actual)
    # Kept extra fields (extra_fields "keep") follow the snapshot's columns, in its types.
    evolved = {str(t) for t in ARROW_TYPES.values()}
    actual = [(n, k) for n, k in actual if n in wanted or k not in evolved]
    differences: list[str] = []
    for name, kind in expected:
        if name not in found:
            differences.append(f"no column {name} (petsync writes {kind})")
        elif found[name] != kind:
            differences.append(f"column {name} is {found[name]}, petsync writes {kind}")
    differences += [
        f"an extra column {name} ({kind})" for name, kind in actual if name not in wanted
    ]
    if not differences and [n for n, _ in actual] != [n for n, _ in expected]:
        shown = ", ".join(n for n, _ in actual)
        differences.append(f"its columns are in another order ({shown})")
    return differences


def refuse_schema(kind: str, where: str, differences: list[str], *, before_fetch: bool) -> None:
    """Refuse a table (``kind``: Delta, Iceberg) that is not petsync's, naming each difference."""
    if differences:
        raise ConfigError(
            f"the {kind} table at {where} is not a petsync snapshot table: "
            + "; ".join(differences)
            + ". petsync never changes or casts a table's schema: export to another "
            + OUT
            + ", or move the table away."
            + (" Nothing was fetched." if before_fetch else " Nothing was committed.")
        )


def type_clashes(
    found: dict[str, str], columns: Mapping[str, ColumnType], *, by_case: bool
) -> list[str]:
    """Tonight's kept columns that exist with another type (or, ``by_case``, under a name that
    differs only in case: readers that ignore case could not tell them apart)."""
    lowered = {name.lower(): name for name in found}
    changed: list[str] = []
    for name, column in columns.items():
        if name in found:
            if found[name] != str(ARROW_TYPES[column]):
                changed.append(f"column {name} is {found[name]}, tonight's values are {column}")
        elif by_case and name.lower() in lowered:
            other = lowered[name.lower()]
            changed.append(f"column {other} exists, tonight's field {name} differs only in case")
    return changed


def refuse_column_types(kind: str, where: str, changed: list[str]) -> None:
    """Refuse to commit when :func:`type_clashes` found any: a column's type never changes."""
    if changed:
        raise ConfigError(
            f"the {kind} table at {where} cannot take tonight's extra fields: "
            + "; ".join(changed)
            + ". petsync adds columns but never changes a column's type: export with "
            + EXTRA_FIELDS.given("drop")
            + ", or to another "
            + OUT
            + ". Nothing was committed."
        )


def plain_type(arrow_type: pa.DataType) -> str:
    """A column's type as the schema guard compares it: every string kind is ``string``
    (delta-rs reads strings back as string_view or large_string)."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if str(arrow_type) == "string_view":
        return "string"
    return str(arrow_type)
