"""The one table schema of a pets snapshot, in Arrow and in pandas.

Every snapshot has exactly these columns, named as the API names them (interface, Pet):
``id`` int64, ``name`` string, ``categoryId`` int64 and ``status`` string. ``id``, ``name``
and ``categoryId`` are required by the interface, so they are never null (a record without
them is quarantined, not written); ``status`` is null when the API sent no status. The
schema is written down, never inferred, so an all-null column keeps its type and a snapshot
of zero pets still has four typed columns.

In pandas (see :func:`to_dataframe`) ids are the nullable ``Int64`` (exact up to 2**63-1,
never float), names ``string`` and status a categorical over the enum plus whatever unknown
values occurred.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

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

# The pandas dtypes a notebook gets from :func:`to_dataframe` (status is a categorical whose
# categories depend on the snapshot, see :func:`status_categories`).
PANDAS_DTYPES: dict[str, str] = {"id": "Int64", "name": "string", "categoryId": "Int64"}


def empty_table() -> pa.Table:
    """A table of zero pets that still carries the full schema."""
    return PET_SCHEMA.empty_table()


def conform(table: pa.Table) -> pa.Table:
    """Return ``table`` with exactly the snapshot schema: column order, types, nullability.

    Raises ``ValueError`` if a column is missing or a required column holds a null, so a
    table that breaks the schema is never written.
    """
    missing = [name for name in COLUMNS if name not in table.column_names]
    if missing:
        raise ValueError(f"table lacks the column(s) {', '.join(missing)}")
    for field in PET_SCHEMA:
        if not field.nullable and table.column(field.name).null_count:
            raise ValueError(f"column {field.name!r} holds nulls but is required")
    return table.select(list(COLUMNS)).cast(PET_SCHEMA)


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
    return frame


def _int64_mapper(arrow_type: pa.DataType) -> object:
    import pandas as pd

    return pd.Int64Dtype() if arrow_type == pa.int64() else None
