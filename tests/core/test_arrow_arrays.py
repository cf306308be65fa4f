"""Arrow arrays built without pa.array(): the values as given, None as null."""

from __future__ import annotations

import datetime as dt
import random
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from petsync.core.arrow_arrays import (
    bool_array,
    date32_array,
    string_array,
    to_numpy,
    true_mask,
)


@pytest.mark.parametrize(
    "values",
    [
        ["Rex", "", "a,b", 'say "hi"'],
        ["é", "😀 Rex", "=1+1", "line\nbreak", "plain"],
        ["sold", None, "available", None, ""],
        [None, "Zoë", "", "😀 Rex", None, "plain", "é"],
        ["a\x00b", None, "é\x00", "\x00"],
        ["", "", None],
        [None, None],
        [],
    ],
    ids=[
        "ascii",
        "non-ascii",
        "nulls-and-empty",
        "nulls-and-non-ascii",
        "nul-inside",
        "only-empty",
        "all-null",
        "empty",
    ],
)
def test_string_array_holds_the_values_with_none_as_null(values: list[str | None]) -> None:
    array = string_array(values)
    array.validate(full=True)
    assert array.type == pa.string()
    assert array.to_pylist() == values
    assert array.null_count == values.count(None)


def test_string_array_offsets_hold_for_any_mix_of_characters() -> None:
    # Multi-byte characters anywhere (first, last, next to an empty string or a null): the
    # offsets moved from characters to bytes must land on every string's bounds.
    rng = random.Random(34)
    alphabet = 'ab é😀,"\nЖ中\x00'
    for _ in range(2000):
        values = [
            None
            if rng.random() < 0.2
            else "".join(rng.choice(alphabet) for _ in range(rng.randrange(5)))
            for _ in range(rng.randrange(8))
        ]
        array = string_array(values)
        array.validate(full=True)
        assert array.to_pylist() == values


def test_string_array_refuses_a_lone_surrogate_like_arrow() -> None:
    with pytest.raises(UnicodeEncodeError):
        string_array(["ok", "\ud800"])


def test_to_numpy_reads_ints_dates_and_booleans_at_any_offset() -> None:
    ints = pa.chunked_array([pa.array([1, 2, 3], pa.int64()), pa.array([4, 5], pa.int64())])
    assert to_numpy(ints).tolist() == [1, 2, 3, 4, 5]
    assert to_numpy(ints.combine_chunks().slice(3)).tolist() == [4, 5]
    days = pa.array([dt.date(1970, 1, 2), dt.date(2026, 11, 25)]).slice(1)
    assert to_numpy(days).tolist() == [(dt.date(2026, 11, 25) - dt.date(1970, 1, 1)).days]
    flags = pa.array([True, False, True, True, False, False, True, False, True, True])
    assert to_numpy(flags.slice(3)).tolist() == flags.to_pylist()[3:]
    with pytest.raises(ValueError, match="nulls"):
        to_numpy(pa.array([1, None], pa.int64()))


def test_true_mask_counts_a_null_as_not_true() -> None:
    flags = pa.array([True, None, False, True, None, True, True, False, None, True])
    expected = [value is True for value in flags.to_pylist()]
    assert true_mask(flags).tolist() == expected
    assert true_mask(flags.slice(5)).tolist() == expected[5:]
    assert true_mask(pa.array([True, False])).tolist() == [True, False]


def test_bool_and_date_arrays_from_numpy() -> None:
    mask = np.array([True, False, True, True, False, True, False, False, True], dtype=bool)
    assert bool_array(mask).to_pylist() == mask.tolist()
    days = np.array([0, 20417], dtype=np.int32)
    epoch = dt.date(1970, 1, 1)
    assert date32_array(days).to_pylist() == [epoch, epoch + dt.timedelta(days=20417)]


def test_none_of_them_imports_pandas() -> None:
    code = """
import sys
import numpy as np
import pyarrow as pa
from petsync.core.arrow_arrays import bool_array, int64_array, to_numpy, true_mask
to_numpy(pa.chunked_array([int64_array(np.arange(2))]))
true_mask(pa.nulls(2, pa.bool_()))
to_numpy(bool_array(np.array([True])))
assert "pandas" not in sys.modules, "pandas was imported"
"""
    subprocess.run([sys.executable, "-c", code], check=True)
