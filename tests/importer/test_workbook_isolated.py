""".xls and .xlsb read in a child process (isolated_read): a far cell, which aborts the
reader, costs that file only. The workbooks are real .xlsb files built by hand."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from petsync.core.errors import InputError
from petsync.core.interface import CHILD_MEMORY_LIMIT
from petsync.importer.sheets.isolated_read import read_in_child
from petsync.importer.sheets.opening import open_spreadsheet
from petsync.importer.sheets.sheet import ReadOptions
from tests.cli.test_import_bounds import run
from tests.docs.markdown import DOCS, table_rows
from tests.importer.xlsb_builder import write_xlsb

HEADER = [(0, 0, "name"), (0, 1, "categoryId")]


def test_an_xlsb_is_read_in_a_child_as_in_the_process(tmp_path: Path) -> None:
    path = write_xlsb(tmp_path / "pets.xlsb", [*HEADER, (1, 0, "Rex"), (1, 1, 12.0)])
    sheet = open_spreadsheet(path)
    assert sheet.sheet == "Pets"
    assert list(sheet.cached_records or []) == [
        (1, ("name", "categoryId"), ()),
        (2, ("Rex", "12"), ()),
    ]


def test_a_cell_at_the_last_column_and_row_aborts_the_child_not_this_process(
    tmp_path: Path,
) -> None:
    path = write_xlsb(tmp_path / "far.xlsb", [*HEADER, (1_048_575, 16_383, 1.0)])
    assert path.stat().st_size < 2_000
    with pytest.raises(InputError) as caught:
        open_spreadsheet(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: the workbook reader stopped (killed by SIGABRT: ")
    assert "memory allocation of" in message  # calamine's own word, without a backtrace
    assert "stack backtrace" not in message
    assert "Delete the rows and columns after your data" in message


def test_a_range_that_fits_in_memory_but_past_the_limits_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    path = write_xlsb(tmp_path / "wide.xlsb", [*HEADER, (2, 4_999, 1.0)])
    with pytest.raises(InputError, match=r"uses the range A1:GJH3 \(5000 columns, 3 rows\)"):
        open_spreadsheet(path)


def test_an_error_of_the_reader_in_the_child_keeps_its_message(tmp_path: Path) -> None:
    path = write_xlsb(tmp_path / "pets.xlsb", HEADER)
    with pytest.raises(InputError, match=r"no sheet named 'Cats'; sheets found: 'Pets'$"):
        open_spreadsheet(path, ReadOptions(sheet="Cats"))


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("import sys; sys.stderr.write('boom\\n'); sys.exit(3)", "(exit status 3: 'boom')"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "(killed by SIGKILL)"),
        ("print('not an answer')", "(it gave no answer)"),
    ],
    ids=["exit", "signal", "no-answer"],
)
def test_a_child_that_dies_or_answers_nothing_is_that_files_input_error(
    tmp_path: Path, code: str, said: str
) -> None:
    path = tmp_path / "pets.xlsb"
    with pytest.raises(InputError) as caught:
        read_in_child(path, None, command=[sys.executable, "-c", code])
    assert str(caught.value).startswith(f"{path}: the workbook reader stopped {said}; ")


def test_the_child_runs_under_the_memory_limit(tmp_path: Path) -> None:
    # 20,001 rows of 1,001 columns: calamine's grid takes about 640 MB, more than the
    # 256 MiB given; without the limit the child would read it and refuse the range.
    path = write_xlsb(tmp_path / "big.xlsb", [*HEADER, (20_000, 1_000, 1.0)])
    with pytest.raises(InputError) as caught:
        read_in_child(path, None, memory_limit=256 << 20)
    message = str(caught.value)
    assert "(killed by SIGABRT: 'memory allocation of" in message
    assert "too large for 268435456 bytes of memory" in message


def test_a_far_cell_xlsb_in_a_glob_is_that_files_failure_and_the_glob_goes_on(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    Path("inbox").mkdir()
    write_xlsb(Path("inbox/far.xlsb"), [*HEADER, (1_048_575, 16_383, 1.0)])
    write_xlsb(Path("inbox/good.xlsb"), [*HEADER, (1, 0, "Bo"), (1, 1, 2.0)])
    Path("inbox/later.csv").write_text("name,categoryId\nRex,1\n")
    result = run(srv, "import", "inbox/*")
    assert result.exit_code == 2, result.output
    assert (
        "inbox/far.xlsb: not imported: inbox/far.xlsb: the workbook reader stopped "
        "(killed by SIGABRT: 'memory allocation of"
    ) in result.stdout
    assert sorted(p.name for p in srv.store.all()) == ["Bo", "Rex"]
    assert result.stdout.splitlines()[-1].startswith("3 files (1 not imported): created 2")


def test_the_limits_table_states_the_childs_memory_limit() -> None:
    rows = {row[0]: row for row in table_rows((DOCS / "limits.md").read_text(encoding="utf-8"))}
    stated = rows["memory of the workbook reader"][2].split(" ")[0]
    assert int(stated.replace(",", "")) == CHILD_MEMORY_LIMIT
