"""The one table schema of a pets snapshot, in Arrow and in pandas.

Every snapshot has these columns first, named as the API names them (interface, Pet):
``id`` int64, ``name`` string, ``categoryId`` int64 and ``status`` string. A snapshot
exported with ``--extra-fields keep`` has one more nullable column per field the API sent
beyond the interface's (:data:`ARROW_TYPES`: string, int64, float64 or bool; which field
gets which is :mod:`petsync.export.extra_fields`), after these; readers keep them. ``id``, ``name``
and ``categoryId`` are required by the interface, so they are never null (a record without
them is quarantined, not written); ``status`` is null when the API sent no status. The
schema is written down, never inferred, so an all-null column keeps its type and a snapshot
of zero pets still has four typed columns.

In pandas (see :func:`to_dataframe`) ids are the nullable ``Int64`` (exact up to 2**63-1,
never float), names ``string`` and status a categorical over the enum plus whatever unknown
values occurred.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from petsync.core.models import STATUS_VALUES

if TYPE_CHECKING:
    import pandas as pd

COLUMNS: tuple[str, ...] = ("id", "name", "categoryId", "status")

PET_SCHEMA: pa.Schema = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        pa.field("categoryId", pa.int64(), nullable=False),
        pa.field("status", pa.string(), nullable=True),
    ]
)

# A kept extra field's column type (``json``: its values as JSON text), and its Arrow type.
ColumnType = Literal["string", "int64", "float64", "bool", "json"]
COLUMN_TYPES: tuple[ColumnType, ...] = ("string", "int64", "float64", "bool", "json")
ARROW_TYPES: dict[ColumnType, pa.DataType] = {
    "string": pa.string(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "json": pa.string(),
}
# The manifest's section on extra fields (its ``fields`` entries name each field's column).
EXTRA_FIELDS_KEY = "extra_fields"

# The pandas dtypes a notebook gets from :func:`to_dataframe` (status is a categorical whose
# categories depend on the snapshot, see :func:`status_categories`).
PANDAS_DTYPES: dict[str, str] = {"id": "Int64", "name": "string", "categoryId": "Int64"}


def output_schema(extra_columns: Mapping[str, ColumnType]) -> pa.Schema:
    """The snapshot schema, then one nullable column per kept extra field, in the given order."""
    schema = PET_SCHEMA
    for name, column in extra_columns.items():
        schema = schema.append(pa.field(name, ARROW_TYPES[column], nullable=True))
    return schema


def recorded_fields(manifest: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """A manifest's extra fields by name (none for a manifest without them)."""
    section = (manifest or {}).get(EXTRA_FIELDS_KEY)
    entries = section.get("fields") if isinstance(section, dict) else None
    if not isinstance(entries, list):
        return {}
    return {
        str(e["name"]): e for e in entries if isinstance(e, dict) and isinstance(e.get("name"), str)
    }


def empty_table() -> pa.Table:
    """A table of zero pets that still carries the full schema."""
    return PET_SCHEMA.empty_table()


def conform(table: pa.Table) -> pa.Table:
    """Return ``table`` with the snapshot schema first (column order, types, nullability),
    then its other columns (kept extra fields) as they are.

    Raises ``ValueError`` if a column is missing or a required column holds a null, so a
    table that breaks the schema is never written.
    """
    missing = [name for name in COLUMNS if name not in table.column_names]
    if missing:
        raise ValueError(f"table lacks the column(s) {', '.join(missing)}")
    for field in PET_SCHEMA:
        if not field.nullable and table.column(field.name).null_count:
            raise ValueError(f"column {field.name!r} holds nulls but is required")
    known = table.select(list(COLUMNS)).cast(PET_SCHEMA)
    for name in extra_columns(table.schema):
        known = known.append_column(table.schema.field(name), table.column(name))
    return known


def extra_columns(schema: pa.Schema) -> list[str]:
    """The columns of ``schema`` beyond the snapshot schema's, in their order."""
    return [name for name in schema.names if name not in COLUMNS]


def status_categories(values: Iterable[str | None]) -> list[str]:
    """The enum's statuses in interface order, then the unknown values seen, sorted."""
    unknown = sorted({v for v in values if v is not None and v not in STATUS_VALUES})
    return [*STATUS_VALUES, *unknown]


def to_dataframe(table: pa.Table) -> pd.DataFrame:
    """Turn a snapshot table into a DataFrame with exact, documented dtypes.

    >>> to_dataframe(empty_table()).dtypes.astype(str).to_dict()  # doctest: +SKIP
    {'id': 'Int64', 'name': 'string', 'categoryId': 'Int64', 'status': 'category'}
    """
    import pandas as pd

    table = conform(table)
    frame = pd.DataFrame(
        {
            "id": table.column("id").to_pandas(types_mapper=_int64_mapper),
            "name": table.column("name").to_pandas().astype("string"),
            "categoryId": table.column("categoryId").to_pandas(types_mapper=_int64_mapper),
        }
    )
    uniques = pc.unique(table.column("status")).to_pylist()
    status_dtype = pd.CategoricalDtype(status_categories(uniques))
    frame["status"] = table.column("status").to_pandas().astype(status_dtype)
    for name in extra_columns(table.schema):
        frame[name] = table.column(name).to_pandas(types_mapper=_nullable_mapper)
    return frame


def _nullable_mapper(arrow_type: pa.DataType) -> object:
    """Kept extra fields as pandas' nullable dtypes: exact ints, and nulls never NaN'd."""
    import pandas as pd

    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return pd.StringDtype()
    if str(arrow_type) == "string_view":  # how delta-rs may read strings back
        return pd.StringDtype()
    mapping = {pa.int64(): pd.Int64Dtype(), pa.float64(): pd.Float64Dtype()}
    return mapping.get(arrow_type, pd.BooleanDtype() if pa.types.is_boolean(arrow_type) else None)


def _int64_mapper(arrow_type: pa.DataType) -> object:
    import pandas as pd

    return pd.Int64Dtype() if arrow_type == pa.int64() else None
