"""Reading CSV and .xlsx: encodings, delimiters, text cells, row numbers, errors as InputError."""

from __future__ import annotations

import datetime as dt
import hashlib
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest

from petsync.core.errors import InputError
from petsync.importer.sheets.opening import open_spreadsheet
from petsync.importer.sheets.sheet import (
    CELL_LIMIT,
    CUT_KEEP,
    CUT_NOTE,
    CutCell,
    ReadOptions,
    SheetRow,
    Spreadsheet,
)
from petsync.importer.sheets.workbook import render_cell


def read(path: Path, **options: str) -> tuple[tuple[str, ...], list[SheetRow], Spreadsheet]:
    with open_spreadsheet(path, ReadOptions(**options)) as sheet:
        rows = list(sheet.rows())
        return sheet.header, rows, sheet


def write(tmp_path: Path, data: bytes, name: str = "pets.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_utf8_bom_is_stripped(tmp_path: Path) -> None:
    path = write(tmp_path, b"\xef\xbb\xbfname,categoryId\nRex,1\n")
    header, rows, sheet = read(path)
    assert header == ("name", "categoryId")
    assert rows == [SheetRow(2, ("Rex", "1"))]
    assert sheet.encoding_label == "utf-8 (BOM)"


def test_utf16_with_bom_is_decoded(tmp_path: Path) -> None:
    path = write(tmp_path, "name\tcategoryId\r\nZoë\t1\r\n".encode("utf-16"))
    header, rows, sheet = read(path)
    assert header == ("name", "categoryId")
    assert rows == [SheetRow(2, ("Zoë", "1"))]
    assert sheet.encoding_label == "utf-16 (BOM)"
    assert sheet.delimiter_name == "tab"


def test_utf16_without_bom_is_read_or_explained(tmp_path: Path) -> None:
    path = write(tmp_path, "name,categoryId\nRex,1\n".encode("utf-16-le"))
    assert read(path)[:2] == (("name", "categoryId"), [SheetRow(2, ("Rex", "1"))])
    # NULs that are no UTF-16 text: the option to pass is named.
    odd = write(tmp_path, b"name,categoryId\n\x00\x00Rex,1\n", "odd.csv")
    with pytest.raises(InputError) as info:
        read(odd)
    assert str(info.value) == (
        f"{odd}: the file holds NUL bytes, as UTF-16 text without a byte-order mark does; "
        "pass encoding='utf-16-le' (or utf-16-be), or save it as CSV UTF-8"
    )
    header, rows, _ = read(path, encoding="utf-16-le")
    assert (header, rows) == (("name", "categoryId"), [SheetRow(2, ("Rex", "1"))])


def test_plain_utf8_has_no_notice(tmp_path: Path) -> None:
    path = write(tmp_path, "name,categoryId\nZoë,1\n".encode())
    _, rows, sheet = read(path)
    assert rows[0].cells == ("Zoë", "1")
    assert sheet.encoding_label == "utf-8"
    assert sheet.encoding_notice is None


def test_cp1252_fallback_comes_with_a_notice(tmp_path: Path) -> None:
    path = write(tmp_path, "name;categoryId\nCafé – “Rex”;1\n".encode("cp1252"))
    _, rows, sheet = read(path)
    assert rows[0].cells == ("Café – “Rex”", "1")
    assert sheet.encoding_label == "cp1252"
    assert str(sheet.encoding_notice) == (
        "pets.csv is not valid UTF-8 (line 2, byte offset 19); read it as cp1252 "
        "(Windows Western European). If names look wrong, pass encoding="
    )


def test_byte_undefined_in_cp1252_stops_without_replacement_chars(tmp_path: Path) -> None:
    path = write(tmp_path, b"name,categoryId\nA\x81B,1\n")
    with pytest.raises(InputError) as info:
        read(path)
    assert str(info.value) == (
        f"{path}, line 2 (byte offset 17): the bytes b'\\x81' are not valid utf-8 nor "
        "cp1252; pass encoding= with the file's real encoding (for example cp1252, "
        "latin-1 or utf-16)"
    )


def test_forced_encoding_that_does_not_fit_names_line_and_offset(tmp_path: Path) -> None:
    path = write(tmp_path, b"name,categoryId\nRex,1\nZo\xeb,2\n")
    with pytest.raises(InputError) as info:
        read(path, encoding="utf-8")
    assert str(info.value).startswith(
        f"{path}, line 3 (byte offset 24): the bytes b'\\xeb' are not valid utf-8;"
    )


def test_encoding_option_overrides_detection(tmp_path: Path) -> None:
    # Valid UTF-8 bytes, but the person says latin-1: taken at their word.
    path = write(tmp_path, "name,categoryId\nZoë,1\n".encode())
    _, rows, sheet = read(path, encoding="latin-1")
    assert rows[0].cells == ("ZoÃ«", "1")
    assert sheet.encoding_label == "iso8859-1"


def test_unknown_encoding_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path, b"name,categoryId\n")
    with pytest.raises(InputError, match="encoding='klingon' is not an encoding"):
        read(path, encoding="klingon")


@pytest.mark.parametrize(
    ("header", "name"),
    [("name,categoryId", "comma"), ("name;categoryId", "semicolon"), ("name\tcategoryId", "tab")],
    ids=["comma", "semicolon", "tab"],
)
def test_delimiter_detected_from_header(tmp_path: Path, header: str, name: str) -> None:
    sep = {"comma": ",", "semicolon": ";", "tab": "\t"}[name]
    path = write(tmp_path, f"{header}\nRex{sep}1\n".encode())
    header_cells, rows, sheet = read(path)
    assert header_cells == ("name", "categoryId")
    assert rows[0].cells == ("Rex", "1")
    assert sheet.delimiter_name == name


def test_delimiter_inside_quotes_does_not_count(tmp_path: Path) -> None:
    path = write(tmp_path, b'"name, full";categoryId\nRex;1\n')
    header, _, sheet = read(path)
    assert header == ("name, full", "categoryId")
    assert sheet.delimiter_name == "semicolon"


def test_ambiguous_delimiter_stops_with_a_hint(tmp_path: Path) -> None:
    path = write(tmp_path, b"name;first,categoryId\n")
    with pytest.raises(InputError) as info:
        read(path)
    assert str(info.value) == (
        f"{path}: cannot tell the delimiter: the header row holds both comma and semicolon. "
        "Pass delimiter='comma', delimiter='semicolon' or delimiter='tab'"
    )


def test_delimiter_option_resolves_ambiguity(tmp_path: Path) -> None:
    path = write(tmp_path, b"name;first,categoryId\nRex;1\n")
    header, rows, _ = read(path, delimiter="semicolon")
    assert header == ("name", "first,categoryId")
    assert rows[0].cells == ("Rex", "1")


def test_bad_delimiter_option(tmp_path: Path) -> None:
    path = write(tmp_path, b"name\n")
    with pytest.raises(InputError, match=r"delimiter='\|' is not supported"):
        read(path, delimiter="|")


def test_every_cell_is_text_and_kept_raw(tmp_path: Path) -> None:
    path = write(tmp_path, b"name,categoryId,status\nNA, 12.0 ,None\nnull,007,\n")
    _, rows, _ = read(path)
    assert [r.cells for r in rows] == [("NA", " 12.0 ", "None"), ("null", "007", "")]


def test_row_numbers_follow_the_spreadsheet_with_multiline_cells_and_blank_rows(
    tmp_path: Path,
) -> None:
    data = b'name,categoryId\r\n"Two\r\nlines",1\r\n\r\n , \r\nLast,2\r\n"Three\nline\ncell",3\r\n'
    path = write(tmp_path, data)
    _, rows, sheet = read(path)
    assert [(r.number, r.cells[0]) for r in rows] == [
        (2, "Two\r\nlines"),
        (5, "Last"),
        (6, "Three\nline\ncell"),
    ]
    assert sheet.blank_rows == 2


def test_unclosed_quote_names_the_row(tmp_path: Path) -> None:
    path = write(tmp_path, b'name,categoryId\nRex,1\n"Open,2\nMore,3\n')
    with pytest.raises(InputError) as info:
        read(path)
    assert str(info.value).startswith(f"{path}, row 3 (line 4): the CSV is malformed")


# A file refused for what its bytes are, before any row: name, bytes, the message's tail.
REFUSED_FILES = [
    ("pets.csv", b"", "the file is empty; row 1 must be the header row"),
    (
        "pets.csv",
        b"PK\x03\x04rest",
        "this is a zip file (an .xlsx workbook?), not CSV; give it the .xlsx suffix to read "
        "it as a workbook",
    ),
    (
        "pets.xls",
        b"\xd0\xcf\x11\xe0",
        "cannot open the workbook (CalamineError: Cfb error: Invalid OLE (4 bytes is too "
        "small, signature \\xd0\\xcf\\x11\\xe0 invalid, not an office document?)); check it "
        "opens in Excel or LibreOffice and is saved as .xlsx, .xls, .xlsb or .ods",
    ),
]


@pytest.mark.parametrize(
    ("name", "data", "message"),
    REFUSED_FILES,
    ids=["empty", "zip-named-csv", "damaged-xls"],
)
def test_unreadable_file_is_refused_with_what_to_do(
    tmp_path: Path, name: str, data: bytes, message: str
) -> None:
    path = write(tmp_path, data, name=name)
    with pytest.raises(InputError) as info:
        read(path)
    assert str(info.value) == f"{path}: {message}"


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read .*nope.csv: No such file"):
        read(tmp_path / "nope.csv")


def test_sha256_fingerprints_the_bytes(tmp_path: Path) -> None:
    data = b"name,categoryId\nRex,1\n"
    path = write(tmp_path, data)
    _, _, sheet = read(path)
    assert sheet.sha256 == hashlib.sha256(data).hexdigest()


def test_petsync_written_file_is_unescaped(tmp_path: Path) -> None:
    data = "name,categoryId,petsync_row\n'=cmd,'-5,2\n''Tis,1,3\n".encode("utf-8-sig")
    path = write(tmp_path, data)
    _, rows, sheet = read(path)
    assert sheet.petsync_written
    assert [r.cells[:2] for r in rows] == [("=cmd", "-5"), ("'Tis", "1")]


def test_other_files_keep_leading_apostrophes(tmp_path: Path) -> None:
    path = write(tmp_path, b"name,categoryId\n'Tis,1\n")
    _, rows, _ = read(path)
    assert rows[0].cells == ("'Tis", "1")


def test_sheet_option_on_csv_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, b"name\n")
    with pytest.raises(
        InputError, match=r"sheet= applies to workbooks \(.xlsx, .ods...\), not to CSV"
    ):
        read(path, sheet="Pets")


# -- xlsx ------------------------------------------------------------------------------------


def make_xlsx(path: Path) -> Path:
    workbook = openpyxl.Workbook()
    first = workbook.active
    assert first is not None
    first.title = "Intro"
    first.append(["name", "categoryId", "status", "born", "flag"])
    first.append(["Rex", 12, "Available", dt.datetime(2024, 3, 1), True])
    first.append(["Tom", 12.0, None, dt.datetime(2024, 3, 1, 14, 30), False])
    first.cell(row=6, column=1, value="Late")
    first.cell(row=6, column=2, value=12.5)
    first.cell(row=7, column=1, value="Big")
    first.cell(row=7, column=2, value="9223372036854775807")
    first.cell(row=8, column=1, value="Formula")
    first.cell(row=8, column=2, value="=1+2")  # no cached value: reads blank
    second = workbook.create_sheet("Second")
    second.append(["name", "categoryId"])
    second.append(["Only", 3])
    workbook.save(path)
    return path


def test_xlsx_first_sheet_cached_values_as_text(tmp_path: Path) -> None:
    path = make_xlsx(tmp_path / "pets.xlsx")
    header, rows, sheet = read(path)
    assert header == ("name", "categoryId", "status", "born", "flag")
    assert [(r.number, r.cells) for r in rows] == [
        (2, ("Rex", "12", "Available", "2024-03-01", "TRUE")),
        (3, ("Tom", "12", "", "2024-03-01 14:30:00", "FALSE")),
        (6, ("Late", "12.5")),
        (7, ("Big", "9223372036854775807")),
        (8, ("Formula",)),
    ]
    assert sheet.blank_rows == 2
    assert sheet.sheet == "Intro"
    assert sheet.encoding_label is None


def test_xlsx_named_sheet(tmp_path: Path) -> None:
    path = make_xlsx(tmp_path / "pets.xlsx")
    _, rows, _ = read(path, sheet="Second")
    assert rows == [SheetRow(2, ("Only", "3"))]


def test_xlsx_unknown_sheet_lists_the_sheets(tmp_path: Path) -> None:
    path = make_xlsx(tmp_path / "pets.xlsx")
    with pytest.raises(InputError) as info:
        read(path, sheet="Nope")
    assert str(info.value) == f"{path}: no sheet named 'Nope'; sheets found: 'Intro', 'Second'"


def test_damaged_xlsx_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path, b"not a zip at all", name="pets.xlsx")
    with pytest.raises(InputError, match=r"pets.xlsx: cannot open the workbook \(.*"):
        read(path)


RENDER = [
    (None, ""),
    ("text", "text"),
    (12, "12"),
    (12.0, "12"),
    (-0.0, "0"),
    (12.5, "12.5"),
    (0.1, "0.1"),
    (2.0**53, "9.007199254740992e+15"),  # not exact: a form the categoryId check rejects
    (-(2.0**60), "-1.152921504606847e+18"),
    (1e20, "1e+20"),
    (True, "TRUE"),
    (dt.date(2024, 1, 2), "2024-01-02"),
    (dt.datetime(2024, 1, 2), "2024-01-02"),
    (dt.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02 03:04:05"),
    (dt.time(3, 4), "03:04:00"),
]


@pytest.mark.parametrize(("value", "text"), RENDER, ids=[repr(v) for v, _ in RENDER])
def test_render_cell_rule(value: object, text: str) -> None:
    assert render_cell(value) == text


# -- long cells and long lines ---------------------------------------------------------------


def test_a_cell_over_the_limit_cuts_its_row_and_the_rest_reads(tmp_path: Path) -> None:
    long = "x" * (CELL_LIMIT + 5)
    path = write(tmp_path, f"name,categoryId\nRex,1\n{long},2\nTom,3\n".encode())
    _, rows, _ = read(path)
    assert [(r.number, r.cut) for r in rows] == [
        (2, ()),
        (3, (CutCell(0, CELL_LIMIT + 5),)),
        (4, ()),
    ]
    assert rows[1].cells == ("x" * CUT_KEEP + CUT_NOTE, "2")
    assert rows[2].cells == ("Tom", "3")


def test_a_long_record_of_short_cells_reads_exactly(tmp_path: Path) -> None:
    cells = [f"{i:05}" * 2000 for i in range(20)]  # 20 cells of 10,000: 200,000 in all
    path = write(tmp_path, ("a\n" + ",".join(cells) + "\r\nlast\n").encode())
    _, rows, _ = read(path)
    assert [r.number for r in rows] == [2, 3]
    assert rows[0].cells == tuple(cells) and rows[0].cut == ()
    assert rows[1].cells == ("last",)


def test_a_long_quoted_cell_keeps_quotes_newlines_and_the_row_numbers(tmp_path: Path) -> None:
    body = 'say ""hi""\r\n' * (CELL_LIMIT // 8)  # over the limit, inside quotes
    data = f'name;notes\nRex;"{body}"\r\n"Tom\nCat";"a;b"\nEnd;\n'
    path = write(tmp_path, data.encode())
    _, rows, sheet = read(path)
    assert [r.number for r in rows] == [2, 3, 4]
    assert rows[0].cells[1].startswith('say "hi"\r\nsay "hi"')
    assert rows[0].cut == (CutCell(1, len(body.replace('""', '"'))),)
    assert rows[1].cells == ("Tom\nCat", "a;b")
    assert sheet.delimiter == ";"


def test_an_unclosed_quote_in_a_long_record_names_the_row(tmp_path: Path) -> None:
    path = write(tmp_path, ('name\nRex\n"' + "y" * (CELL_LIMIT * 2)).encode())
    with pytest.raises(InputError, match=r"row 3 \(line \d+\): the CSV is malformed \(a quoted"):
        read(path)


def test_memory_stays_bounded_whatever_the_line_length(tmp_path: Path) -> None:
    import tracemalloc

    size = 30 * 1024 * 1024  # one 30 MiB line
    path = tmp_path / "pets.csv"
    with path.open("wb") as handle:
        handle.write(b"name,categoryId\nRex,")
        for _ in range(size // (1 << 20)):
            handle.write(b"9" * (1 << 20))
        handle.write(b"\nTom,2\n")
    tracemalloc.start()
    try:
        _, rows, _ = read(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(r.number, bool(r.cut)) for r in rows] == [(2, True), (3, False)]
    assert rows[0].cut[0].length == size
    assert peak < 12 * 1024 * 1024, f"peak {peak / 2**20:.1f} MiB for a {size >> 20} MiB line"


def test_a_cut_cell_fed_back_in_a_reject_file_is_still_too_long(tmp_path: Path) -> None:
    data = f"name,petsync_row\nRex{CUT_NOTE},2\n".encode()
    _, rows, _ = read(write(tmp_path, data))
    assert rows[0].cut == (CutCell(0, -1),)


def make_ods(path: Path, rows: list[list[str]]) -> Path:
    """A minimal OpenDocument spreadsheet (what LibreOffice saves), made by hand."""
    import zipfile

    table = "".join(
        "<table:table-row>"
        + "".join(
            f'<table:table-cell office:value-type="string"><text:p>{c}</text:p></table:table-cell>'
            for c in row
        )
        + "</table:table-row>"
        for row in rows
    )
    content = (
        '<?xml version="1.0" encoding="UTF-8"?><office:document-content '
        'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">'
        f'<office:body><office:spreadsheet><table:table table:name="Pets">{table}'
        "</table:table></office:spreadsheet></office:body></office:document-content>"
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
        'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" '
        'manifest:version="1.2"><manifest:file-entry manifest:full-path="/" '
        'manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        "</manifest:manifest>"
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        archive.writestr("META-INF/manifest.xml", manifest)
        archive.writestr("content.xml", content)
    return path


def test_ods_is_read_like_xlsx(tmp_path: Path) -> None:
    path = make_ods(tmp_path / "pets.ods", [["name", "categoryId"], ["Rex", "1"]])
    header, rows, sheet = read(path)
    assert (header, rows, sheet.sheet) == (
        ("name", "categoryId"),
        [SheetRow(2, ("Rex", "1"))],
        "Pets",
    )


@pytest.mark.parametrize("newline", ["\r\n", "\r", "\n"], ids=["crlf", "cr", "lf"])
def test_rows_after_a_long_record_read_whatever_the_line_ends(tmp_path: Path, newline: str) -> None:
    long = "w" * (CELL_LIMIT + 10)
    text = newline.join(["name,categoryId", f"{long},1", "Rex,2", "Tom,3", ""])
    _, rows, _ = read(write(tmp_path, text.encode()))
    assert [(r.number, r.cells[0][:3], bool(r.cut)) for r in rows] == [
        (2, "www", True),
        (3, "Rex", False),
        (4, "Tom", False),
    ]


def test_an_error_after_a_long_record_names_its_line(tmp_path: Path) -> None:
    long = "w" * (CELL_LIMIT + 10)
    path = write(tmp_path, f'name,categoryId\n{long},1\nRex,2\n"Open,3\n'.encode())
    with pytest.raises(InputError, match=r"row 4 \(line 4\): the CSV is malformed"):
        read(path)


def test_a_csv_file_is_read_without_loading_the_workbook_readers(tmp_path: Path) -> None:
    # The workbook readers (zip, XML parsers) cost a CSV import start-up time for nothing;
    # the whole import's modules, and the CSV read, leave them out.
    path = tmp_path / "rows.csv"
    path.write_text("name,categoryId\nRex,1\n", encoding="utf-8")
    code = (
        "import sys; import petsync.cli.main, petsync.importer.batch, petsync.importer.run; "
        "from pathlib import Path; "
        "from petsync.importer.sheets.opening import open_spreadsheet; "
        f"sheet = open_spreadsheet(Path({str(path)!r})); "
        "print(len(list(sheet.rows())), 'petsync.importer.sheets.workbook' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["1", "False"]
