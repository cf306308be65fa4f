"""A workbook is read from the descriptor its check opened, never reopened by its name.

The readers (zipfile, calamine, the reading child) open what they read themselves; a file
swapped in at the name after the check (another workbook here; a FIFO would block) must
not be what they read. The swap is made by a wrapper around the reader, so it lands after
the check and the hash and before the reader opens anything.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from petsync.importer.sheets import workbook
from petsync.importer.sheets.opening import open_spreadsheet
from tests.importer.xlsb_builder import write_xlsb

needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")


def write_xlsx(path: Path, name: str) -> Path:
    book = openpyxl.Workbook()
    book.active.append(["name", "categoryId"])
    book.active.append([name, 12])
    book.save(path)
    return path


def swapping(real: Callable[..., Any], path: Path, other: Path) -> Callable[..., Any]:
    def read(*args: Any, **kwargs: Any) -> Any:
        os.replace(other, path)  # after the check and the hash, before the reader opens it
        return real(*args, **kwargs)

    return read


def rows_of(path: Path) -> list[tuple[str, ...]]:
    with open_spreadsheet(path) as sheet:
        return [row.cells for row in sheet.rows()]


@needs_proc
def test_an_xlsx_swapped_after_its_check_is_not_what_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_xlsx(tmp_path / "pets.xlsx", "Rex")
    other = write_xlsx(tmp_path / "other.xlsx", "Mallory")
    reader = swapping(workbook.read_sheet_values, path, other)
    monkeypatch.setattr(workbook, "read_sheet_values", reader)

    assert rows_of(path) == [("Rex", "12")]
    monkeypatch.undo()
    assert rows_of(path) == [("Mallory", "12")]  # the name's new file, checked in its turn


@needs_proc
def test_the_reading_child_reads_the_checked_descriptor_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    header = [(0, 0, "name"), (0, 1, "categoryId")]
    path = write_xlsb(tmp_path / "pets.xlsb", [*header, (1, 0, "Rex"), (1, 1, 12.0)])
    other = write_xlsb(tmp_path / "other.xlsb", [*header, (1, 0, "Mallory"), (1, 1, 12.0)])
    monkeypatch.setattr(workbook, "read_in_child", swapping(workbook.read_in_child, path, other))

    assert rows_of(path) == [("Rex", "12")]


@needs_proc
def test_merged_ranges_are_read_from_the_checked_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A FIFO swapped in at the name before the ranges are read is never opened: with no
    # writer that open would block; this test holds one, so a reader that went by the
    # name would find no zip instead of hanging.
    path = tmp_path / "pets.xlsx"
    book = openpyxl.Workbook()
    for row in (["name", "categoryId"], ["Rex", 12], [None, None]):
        book.active.append(row)
    book.active.merge_cells("A2:A3")
    book.save(path)
    real = workbook.read_merged_ranges
    writer: list[int] = []

    def fifo_then_read(*args: Any) -> Any:
        path.unlink()
        os.mkfifo(path)
        writer.append(os.open(path, os.O_RDWR | os.O_NONBLOCK))
        return real(*args)

    monkeypatch.setattr(workbook, "read_merged_ranges", fifo_then_read)
    try:
        with open_spreadsheet(path) as sheet:
            assert [str(r) for r in sheet.merged_ranges] == ["A2:A3"]
    finally:
        for fd in writer:
            os.close(fd)
