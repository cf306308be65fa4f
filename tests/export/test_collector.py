from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

from petsync.core.models import INT64_MAX, INT64_MIN, Pet, PetStatus
from petsync.export.collector import PetCollector, _string_array, source_of


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
    array = _string_array(values)
    array.validate(full=True)
    assert array.type == pa.string()
    assert array.to_pylist() == values
    assert array.null_count == values.count(None)


def test_string_array_refuses_a_lone_surrogate_like_arrow() -> None:
    with pytest.raises(UnicodeEncodeError):
        _string_array(["ok", "\ud800"])


def test_collected_rows_keep_exact_int64_and_null_status(tmp_path: Path) -> None:
    collector = PetCollector(tmp_path / "rows.arrow", batch_rows=2)
    pets = [
        Pet(INT64_MAX, "max é", INT64_MIN, None),
        Pet(INT64_MIN, "", 0, "sold"),
        Pet(7, "=x", INT64_MAX, ""),
    ]
    collector.add(source_of(PetStatus.SOLD), pets)
    done = collector.finish()
    done.write(tmp_path / "pets.parquet", None)
    import pyarrow.parquet as pq

    rows = pq.read_table(tmp_path / "pets.parquet").to_pylist()
    assert rows == [
        {"id": p.id, "name": p.name, "categoryId": p.categoryId, "status": p.status} for p in pets
    ]
    assert done.status_mismatches == 2


def test_collecting_and_writing_do_not_import_pandas(tmp_path: Path) -> None:
    # pa.array() imports pandas on first use (~0.6 s, 35 MiB); the export never needs it.
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from petsync.export.collector import PetCollector, source_of
        from petsync.core.models import Pet
        out = Path({str(tmp_path)!r})
        collector = PetCollector(out / "rows.arrow", batch_rows=2)
        pets = [Pet(i, "n", 1, None if i % 2 else "sold") for i in range(5)]
        collector.add(source_of(None), pets)
        done = collector.finish()
        done.write(out / "pets.parquet", out / "pets.csv")
        print(done.pets, "pandas" in sys.modules)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.split() == ["5", "False"]
