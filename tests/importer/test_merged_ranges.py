"""Merged ranges read from a workbook's XML: across read chunks, and in .ods's own terms."""

from __future__ import annotations

import zipfile
from pathlib import Path

import openpyxl
import pytest

from petsync.importer.sheets import merged_ranges
from petsync.importer.sheets.merged_ranges import read_merged_ranges


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_xlsx_ranges_are_found_whatever_the_chunk_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(merged_ranges, "_CHUNK", chunk)
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    for row in range(1, 40):
        sheet.append([f"r{row}", row, "x"])
    for ref in ("A1:C1", "B3:B4", "C10:C30", "AA7:AB8"):
        sheet.merge_cells(ref)
    book.save(tmp_path / "m.xlsx")
    found = [
        str(r) for r in read_merged_ranges(tmp_path / "m.xlsx", "Sheet", str(tmp_path / "m.xlsx"))
    ]
    assert found == ["A1:C1", "B3:B4", "AA7:AB8", "C10:C30"]


ODS_CONTENT = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
  xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0">
<office:body><office:spreadsheet>
<table:table table:name="Other"><table:table-row>
  <table:table-cell table:number-rows-spanned="9"/></table:table-row></table:table>
<table:table table:name="Pets">
  <table:table-row><table:table-cell table:number-columns-spanned="3"/>
    <table:covered-table-cell table:number-columns-repeated="2"/></table:table-row>
  <table:table-row table:number-rows-repeated="3"><table:table-cell/></table:table-row>
  <table:table-row><table:table-cell table:number-columns-repeated="2"/>
    <table:table-cell table:number-rows-spanned="2"/></table:table-row>
</table:table>
</office:spreadsheet></office:body></office:document-content>
"""


def test_ods_ranges_count_repeated_rows_and_columns(tmp_path: Path) -> None:
    path = tmp_path / "m.ods"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("content.xml", ODS_CONTENT)
    assert [str(r) for r in read_merged_ranges(path, "Pets", str(path))] == ["A1:C1", "C5:C6"]
    assert [str(r) for r in read_merged_ranges(path, "Other", str(path))] == ["A1:A9"]


def test_a_damaged_workbook_gives_no_ranges(tmp_path: Path) -> None:
    path = tmp_path / "m.xlsx"
    path.write_bytes(b"PK\x03\x04 not really a zip")
    assert read_merged_ranges(path, "Sheet", str(path)) == []


@pytest.mark.parametrize("name", ["m.xls", "m.xlsb"])
def test_xls_and_xlsb_give_no_ranges_without_a_warning(
    tmp_path: Path, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Their covered cells read blank (see the module doc); an .xls is an OLE file, not a
    # zip, and every import of one warned that its merged cells "could not be read".
    path = tmp_path / name
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504))
    with caplog.at_level("WARNING"):
        assert read_merged_ranges(path, "Sheet", str(path)) == []
    assert caplog.records == []
