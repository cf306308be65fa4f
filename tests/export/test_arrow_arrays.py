"""Arrow arrays built without pa.array(): the values as given, None as null."""

from __future__ import annotations

import pyarrow as pa
import pytest

from petsync.export.arrow_arrays import string_array


@pytest.mark.parametrize(
    "values",
    [
        ["Rex", "", "a,b", 'say "hi"'],
        ["é", "😀 Rex", "=1+1", "line\nbreak", "plain"],
        ["sold", None, "available", None, ""],
        [None, None],
        [],
    ],
    ids=["ascii", "non-ascii", "nulls-and-empty", "all-null", "empty"],
)
def test_string_array_holds_the_values_with_none_as_null(values: list[str | None]) -> None:
    array = string_array(values)
    array.validate(full=True)
    assert array.type == pa.string()
    assert array.to_pylist() == values
    assert array.null_count == values.count(None)


def test_string_array_refuses_a_lone_surrogate_like_arrow() -> None:
    with pytest.raises(UnicodeEncodeError):
        string_array(["ok", "\ud800"])
