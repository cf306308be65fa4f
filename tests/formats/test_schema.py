"""The one snapshot schema and the DataFrame dtypes notebooks get."""

from __future__ import annotations

import pyarrow as pa
import pytest

from petsync.formats.schema import (
    COLUMNS,
    PET_SCHEMA,
    conform,
    empty_table,
    status_categories,
    to_dataframe,
)

BIG, SMALL = 2**63 - 1, -(2**63)


def table(**columns: list[object]) -> pa.Table:
    return pa.table(columns)


def test_schema_has_the_api_column_names_types_and_nullability() -> None:
    assert [(f.name, str(f.type), f.nullable) for f in PET_SCHEMA] == [
        ("id", "int64", False),
        ("name", "string", False),
        ("categoryId", "int64", False),
        ("status", "string", True),
    ]


def test_empty_table_keeps_every_typed_column() -> None:
    assert empty_table().schema == PET_SCHEMA
    assert empty_table().column_names == list(COLUMNS)


def test_all_null_status_column_keeps_its_string_type() -> None:
    conformed = conform(
        table(id=[1], name=["a"], categoryId=[2], status=pa.array([None], pa.null()))
    )

    assert conformed.schema == PET_SCHEMA


def test_conform_refuses_a_null_id() -> None:
    with pytest.raises(ValueError, match="column 'id' holds nulls but is required"):
        conform(table(id=[None, 1], name=["a", "b"], categoryId=[1, 1], status=[None, None]))


def test_conform_refuses_a_missing_column() -> None:
    with pytest.raises(ValueError, match="table lacks the column\\(s\\) categoryId"):
        conform(table(id=[1], name=["a"], status=["sold"]))


def test_dataframe_has_exact_nullable_dtypes() -> None:
    frame = to_dataframe(
        table(id=[BIG, SMALL], name=["a", ""], categoryId=[SMALL, BIG], status=[None, "sold"])
    )

    assert frame.dtypes.astype(str).to_dict() == {
        "id": "Int64",
        "name": "string",
        "categoryId": "Int64",
        "status": "category",
    }
    assert frame["id"].tolist() == [BIG, SMALL]
    assert frame["categoryId"].tolist() == [SMALL, BIG]
    assert frame["name"].tolist() == ["a", ""]


def test_status_categories_are_the_enum_then_unknowns_seen() -> None:
    frame = to_dataframe(
        table(
            id=[1, 2, 3],
            name=["a", "b", "c"],
            categoryId=[1, 1, 1],
            status=["zeta", None, "adopted"],
        )
    )

    assert list(frame["status"].cat.categories) == [
        "available",
        "pending",
        "sold",
        "adopted",
        "zeta",
    ]
    assert frame["status"].isna().tolist() == [False, True, False]


def test_status_categories_ignore_null_and_known_values() -> None:
    assert status_categories(["sold", None, "x", "x"]) == ["available", "pending", "sold", "x"]
