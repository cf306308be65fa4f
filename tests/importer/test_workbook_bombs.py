"""Workbooks measured before they are expanded (issue: every local input bounded): an .ods
of repeated rows and cells, of repeated long text or of whitespace, an .xlsx or .xlsb whose
cells share one long string, an .xlsx whose string table announces billions. Each is that
file's exit 2, naming the bound, in under 1 GiB of address space; a glob goes on."""

from __future__ import annotations

import resource
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from petsync.core.errors import InputError
from petsync.core.interface import (
    CHILD_CPU_LIMIT,
    SHARED_STRING_LIMIT,
    SHEET_CELL_LIMIT,
    WORKBOOK_TEXT_LIMIT,
)
from petsync.importer.sheets import inflating, isolated_read, sheet_values, workbook
from petsync.importer.sheets.inflating import UnmeasuredWorkbook
from petsync.importer.sheets.ods_content import measure_ods
from petsync.importer.sheets.opening import open_spreadsheet
from petsync.importer.sheets.sheet import ReadOptions
from tests.cli.test_import_bounds import run
from tests.docs.markdown import DOCS, table_rows
from tests.importer.workbook_bombs import (
    HEADER_ROW,
    ods_cell,
    ods_row,
    write_ods,
    write_shared_xlsx,
)
from tests.importer.xlsb_builder import Shared, write_xlsb

GIB = 1 << 30
REX = ods_row(ods_cell("Rex") + ods_cell(1))


def repeated_cells_ods(path: Path) -> Path:
    """The issue's 851-byte .ods: one row of a 1,024-column cell, 97,000 times (99 M cells)."""
    bomb = ods_row(ods_cell(1, repeats=1024), repeats=97_000)
    return write_ods(path, ("Pets", HEADER_ROW + bomb))


def repeated_text_ods(path: Path) -> Path:
    """A 1 MiB text cell repeated over 300 columns: 300 MiB of cells from a 2 KB file."""
    return write_ods(path, ("Pets", HEADER_ROW + ods_row(ods_cell("x" * (1 << 20), 300))))


def shared_string_xlsx(path: Path) -> Path:
    """The issue's .xlsx: 2,000 cells pointing at one 1 MB shared string (2 GB of cells)."""
    return write_shared_xlsx(path, ["x" * 1_000_000], [0] * 2_000)


def shared_string_xlsb(path: Path) -> Path:
    """The same in an .xlsb: 2,000 cells pointing at one 1 MB shared string."""
    cells = [(0, 0, "name"), (0, 1, "categoryId")]
    cells += [(row, 0, Shared(0)) for row in range(1, 2_001)]
    return write_xlsb(path, cells, strings=["x" * 1_000_000])


def announced_strings_xlsx(path: Path) -> Path:
    """An .xlsx whose string table announces 10**11 strings (the reader reserves room)."""
    return write_shared_xlsx(path, ["Rex"], [0], unique_count=10**11)


def test_an_ods_of_repeated_rows_and_cells_is_refused_before_it_is_expanded(
    tmp_path: Path,
) -> None:
    path = repeated_cells_ods(tmp_path / "bomb.ods")
    assert path.stat().st_size < 1_000
    with pytest.raises(InputError, match=r"uses the range A1:AMJ97001 \(1024 columns, 97001 rows"):
        open_spreadsheet(path)


def test_an_ods_whose_repeated_text_would_fill_memory_is_refused_naming_the_bound(
    tmp_path: Path,
) -> None:
    path = repeated_text_ods(tmp_path / "text.ods")
    assert path.stat().st_size < 5_000
    with pytest.raises(InputError) as caught:
        open_spreadsheet(path)
    assert f"would hold more than {WORKBOOK_TEXT_LIMIT} bytes" in str(caught.value)
    assert "at sheet 'Pets', row 2" in str(caught.value)


def test_every_sheet_of_an_ods_is_measured_not_only_the_one_read(tmp_path: Path) -> None:
    bomb = ods_row(ods_cell(1, repeats=1024), repeats=97_000)
    path = write_ods(tmp_path / "two.ods", ("Pets", HEADER_ROW + REX), ("Notes", bomb))
    with pytest.raises(InputError, match=r"sheet 'Notes' uses the range A1:AMJ97000"):
        open_spreadsheet(path, ReadOptions(sheet="Pets"))


def test_the_sheets_of_an_ods_together_are_held_to_the_cell_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from petsync.importer.sheets import ods_content

    monkeypatch.setattr(ods_content, "SHEET_CELL_LIMIT", 1_000)
    block = ods_row(ods_cell(1, repeats=20), repeats=30)  # 600 cells a sheet
    path = write_ods(tmp_path / "two.ods", ("A", block), ("B", block))
    with pytest.raises(InputError, match=r"hold more than 1000 cells together \(at sheet 'B'"):
        measure_ods(path, None)


def test_an_ods_of_whitespace_is_refused_at_the_inflation_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inflating, "WORKBOOK_XML_LIMIT", 4 << 20)
    path = write_ods(tmp_path / "air.ods", ("Pets", HEADER_ROW + REX), padding=5 << 20)
    assert path.stat().st_size < 20_000
    with pytest.raises(InputError, match=r"inflates to more than 4194304 bytes \(at 'content"):
        open_spreadsheet(path)


def test_an_ods_under_the_bounds_reads_its_repeats_as_cells(tmp_path: Path) -> None:
    rows = HEADER_ROW + ods_row(ods_cell("Rex") + ods_cell(1), repeats=3)
    path = write_ods(tmp_path / "pets.ods", ("Pets", rows))
    records = open_spreadsheet(path).cached_records or []
    assert [cells for _, cells, _ in records] == [("name", "categoryId")] + [("Rex", "1")] * 3


@pytest.mark.parametrize("suffix", ["xlsx", "xlsb"])
def test_cells_sharing_one_long_string_are_refused_before_they_are_read(
    tmp_path: Path, suffix: str
) -> None:
    build = shared_string_xlsx if suffix == "xlsx" else shared_string_xlsb
    path = build(tmp_path / f"shared.{suffix}")
    assert path.stat().st_size < 20_000
    with pytest.raises(InputError) as caught:
        open_spreadsheet(path)
    message = str(caught.value)
    assert f"sheet 'Pets' would hold more than {WORKBOOK_TEXT_LIMIT} bytes of shared" in message
    assert "copies a shared string into every cell that uses it" in message
    assert "the workbook reader stopped" not in message  # measured, not aborted


def test_xlsb_shared_strings_under_the_bound_are_read(tmp_path: Path) -> None:
    cells = [(0, 0, "name"), (1, 0, Shared(1)), (2, 0, Shared(0)), (3, 0, Shared(1))]
    path = write_xlsb(tmp_path / "ok.xlsb", cells, strings=["Rex", "y" * 10_000])
    records = open_spreadsheet(path).cached_records or []
    assert [cells[0] for _, cells, _ in records] == ["name", "y" * 10_000, "Rex", "y" * 10_000]


def test_an_xlsx_announcing_billions_of_shared_strings_is_refused(tmp_path: Path) -> None:
    path = announced_strings_xlsx(tmp_path / "count.xlsx")
    with pytest.raises(
        InputError,
        match=f"announces 100000000000 shared strings, more than "
        f"petsync reads \\({SHARED_STRING_LIMIT}\\)",
    ):
        open_spreadsheet(path)


def test_shared_strings_under_the_bound_are_read(tmp_path: Path) -> None:
    long = "y" * 10_000
    path = write_shared_xlsx(tmp_path / "ok.xlsx", ["Rex", long], [0, 1, 1, 0])
    records = open_spreadsheet(path).cached_records or []
    assert [cells[0] for _, cells, _ in records[1:]] == ["Rex", long, long, "Rex"]


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (GIB, GIB))


BOMBS = {
    "ods-repeats": (repeated_cells_ods, "uses the range A1:AMJ97001"),
    "ods-text": (repeated_text_ods, f"would hold more than {WORKBOOK_TEXT_LIMIT} bytes"),
    "xlsx-shared": (shared_string_xlsx, f"would hold more than {WORKBOOK_TEXT_LIMIT} bytes"),
    "xlsx-count": (announced_strings_xlsx, "announces 100000000000 shared strings"),
    "xlsb-shared": (shared_string_xlsb, f"would hold more than {WORKBOOK_TEXT_LIMIT} bytes"),
}


@pytest.mark.parametrize("case", sorted(BOMBS), ids=sorted(BOMBS))
def test_each_bomb_is_exit_2_in_under_a_gibibyte(tmp_path: Path, case: str) -> None:
    build, said = BOMBS[case]
    path = build(tmp_path / f"bomb.{case.split('-')[0]}")
    done = subprocess.run(
        [sys.executable, "-m", "petsync", "import", str(path), "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited,  # only setrlimit, before exec
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert "Traceback" not in done.stderr


def test_a_bomb_in_a_glob_is_that_files_failure_and_the_glob_goes_on(
    petstore_server: Any, isolated: Path
) -> None:
    srv = petstore_server()
    inbox = Path("inbox")
    inbox.mkdir()
    repeated_cells_ods(inbox / "a.ods")
    shared_string_xlsx(inbox / "b.xlsx")
    (inbox / "c.csv").write_text("name,categoryId\nRex,1\n")
    result = run(srv, "import", "inbox/*")
    assert result.exit_code == 2, result.output
    assert "inbox/a.ods: not imported: inbox/a.ods: sheet 'Pets' uses the range" in result.stdout
    assert "inbox/b.xlsx: not imported: inbox/b.xlsx: the cells of sheet 'Pets'" in result.stdout
    assert [p.name for p in srv.store.all()] == ["Rex"]


def test_the_limits_table_states_the_workbook_bounds() -> None:
    rows = {row[0]: row for row in table_rows((DOCS / "limits.md").read_text(encoding="utf-8"))}
    stated = {
        name: int(rows[name][2].split(" ")[0].replace(",", ""))
        for name in ("bytes the cells would hold", "shared strings of a workbook")
    }
    assert stated == {
        "bytes the cells would hold": WORKBOOK_TEXT_LIMIT,
        "shared strings of a workbook": SHARED_STRING_LIMIT,
    }
    assert rows["cells of all sheets together"][2] == f"{SHEET_CELL_LIMIT:,}"


def test_an_ods_the_measure_cannot_read_through_is_read_in_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A cell whose one attribute is longer than a tag may be (1 MiB): not measured here.
    long = f'<table:table-cell office:value-type="string" office:string-value="{"x" * (3 << 20)}"/>'
    path = write_ods(tmp_path / "odd.ods", ("Pets", HEADER_ROW + ods_row(ods_cell("Rex") + long)))
    children: list[Path] = []

    def in_child(path: Path, sheet_name: str | None, *held: Any) -> Any:
        children.append(path)
        return isolated_read.read_in_child(path, sheet_name, *held)

    monkeypatch.setattr(workbook, "read_in_child", in_child)
    records = open_spreadsheet(path).cached_records or []
    assert children == [path]
    assert records[1][1][0] == "Rex"


def test_an_xlsx_whose_range_cannot_be_measured_is_read_in_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_shared_xlsx(tmp_path / "odd.xlsx", ["Rex"], [0])
    monkeypatch.setattr(sheet_values, "check_sheet_range", lambda *_: None)
    with pytest.raises(UnmeasuredWorkbook):
        sheet_values.read_sheet_values(path, None)
    monkeypatch.setattr(workbook, "read_in_child", lambda *_: ("Pets", [["name"], ["Rex"]]))
    assert (open_spreadsheet(path).cached_records or [])[1][1] == ("Rex",)


def cut_ods(path: Path) -> Path:
    """An .ods whose content ends inside its sheet (before ``</table:table>``)."""
    write_ods(path, ("Pets", HEADER_ROW + REX))
    with zipfile.ZipFile(path) as archive:
        parts = {name: archive.read(name) for name in archive.namelist()}
    content = parts["content.xml"]
    parts["content.xml"] = content[: content.index(b"</table:table>")]
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return path


def test_an_ods_cut_inside_a_sheet_is_refused_not_read_forever(tmp_path: Path) -> None:
    # calamine's reader loops forever on an .ods whose content ends inside a sheet.
    path = cut_ods(tmp_path / "cut.ods")
    with pytest.raises(InputError, match=r"cut.ods: the workbook ends inside sheet 'Pets'"):
        open_spreadsheet(path)


def test_a_reader_that_loops_is_stopped_by_its_cpu_limit(tmp_path: Path) -> None:
    # The same cut .ods read in the child without the measure: calamine loops on it.
    path = cut_ods(tmp_path / "cut.ods")
    with pytest.raises(InputError, match=r"stopped after 1 s of CPU time \(calamine reads"):
        isolated_read.read_in_child(path, None, cpu_limit=1)


def test_the_limits_table_states_the_childs_cpu_limit() -> None:
    rows = {row[0]: row for row in table_rows((DOCS / "limits.md").read_text(encoding="utf-8"))}
    assert rows["CPU time of the workbook reader"][2] == f"{CHILD_CPU_LIMIT} s"
