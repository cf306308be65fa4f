"""Small workbooks built by hand that stand for far more than their bytes: an .ods of
repeated rows and cells or of whitespace, an .xlsx whose cells share one long string or
whose string table announces billions. Shared by the plain tests and the fuzz suite."""

from __future__ import annotations

import zipfile
from pathlib import Path

ODS_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'
)
_MANIFEST = (
    '<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:'
    'names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry '
    'manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.'
    'spreadsheet"/><manifest:file-entry manifest:full-path="content.xml" '
    'manifest:media-type="text/xml"/></manifest:manifest>'
)
HEADER_ROW = (
    '<table:table-row><table:table-cell office:value-type="string"><text:p>name</text:p>'
    '</table:table-cell><table:table-cell office:value-type="string"><text:p>categoryId'
    "</text:p></table:table-cell></table:table-row>"
)


def ods_cell(value: str | int | None, repeats: int = 1, formula: str | None = None) -> str:
    """One ``table:table-cell``: text, a number, or empty; repeated, with a formula."""
    attrs = f' table:number-columns-repeated="{repeats}"' if repeats > 1 else ""
    if formula is not None:
        attrs += f' table:formula="{formula}"'
    if isinstance(value, int):
        return f'<table:table-cell office:value-type="float" office:value="{value}"{attrs}/>'
    if value is None:
        return f"<table:table-cell{attrs}/>"
    return (
        f'<table:table-cell office:value-type="string"{attrs}><text:p>{value}</text:p>'
        "</table:table-cell>"
    )


def ods_row(cells: str, repeats: int = 1) -> str:
    attrs = f' table:number-rows-repeated="{repeats}"' if repeats > 1 else ""
    return f"<table:table-row{attrs}>{cells}</table:table-row>"


def write_ods(path: Path, *tables: tuple[str, str], padding: int = 0) -> Path:
    """An .ods of ``(sheet name, rows XML)`` tables; ``padding`` bytes of spaces after the
    first table's first row (written a megabyte at a time: a whitespace bomb)."""
    head = (
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ODS_NS} '
        'office:version="1.2"><office:body><office:spreadsheet>'
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet")
        archive.writestr("META-INF/manifest.xml", _MANIFEST, zipfile.ZIP_DEFLATED)
        info = zipfile.ZipInfo("content.xml")
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as content:
            content.write(head.encode())
            for index, (name, rows) in enumerate(tables):
                content.write(f'<table:table table:name="{name}">'.encode())
                if index == 0 and padding:
                    first, rest = rows.split("</table:table-row>", 1)
                    content.write((first + "</table:table-row>").encode())
                    _spaces(content, padding)
                    rows = rest
                content.write(f"{rows}</table:table>".encode())
            content.write(b"</office:spreadsheet></office:body></office:document-content>")
    return path


def _spaces(stream: object, size: int) -> None:
    block = b" " * (1 << 20)
    while size > 0:
        stream.write(block[: min(size, len(block))])  # type: ignore[attr-defined]
        size -= len(block)


_XLSX_PARTS = {
    "[Content_Types].xml": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.'
        'openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType='
        '"application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" '
        'ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType='
        '"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.'
        'openxmlformats-officedocument.spreadsheetml.worksheet+xml"/><Override PartName='
        '"/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.'
        'spreadsheetml.sharedStrings+xml"/></Types>'
    ),
    "_rels/.rels": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://'
        'schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type='
        '"http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
        'Target="xl/workbook.xml"/></Relationships>'
    ),
    "xl/workbook.xml": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook xmlns="http://schemas'
        '.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.'
        'org/officeDocument/2006/relationships"><sheets><sheet name="Pets" sheetId="1" '
        'r:id="rId1"/></sheets></workbook>'
    ),
    "xl/_rels/workbook.xml.rels": (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://'
        'schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type='
        '"http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
        'Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.'
        'openxmlformats.org/officeDocument/2006/relationships/sharedStrings" '
        'Target="sharedStrings.xml"/></Relationships>'
    ),
}
_MAIN = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'


def write_shared_xlsx(
    path: Path, strings: list[str], uses: list[int], unique_count: int | None = None
) -> Path:
    """An .xlsx whose header is name, categoryId and whose rows' names are the shared
    strings ``uses`` (indexes into ``strings``), one row each, categoryId 1."""
    rows = [
        '<row r="1"><c r="A1" t="inlineStr"><is><t>name</t></is></c>'
        '<c r="B1" t="inlineStr"><is><t>categoryId</t></is></c></row>'
    ]
    for number, index in enumerate(uses, start=2):
        rows.append(
            f'<row r="{number}"><c r="A{number}" t="s"><v>{index}</v></c>'
            f'<c r="B{number}"><v>1</v></c></row>'
        )
    sheet = f'<?xml version="1.0" encoding="UTF-8"?><worksheet {_MAIN}><sheetData>'
    sheet += "".join(rows) + "</sheetData></worksheet>"
    unique = len(strings) if unique_count is None else unique_count
    table = f'<sst {_MAIN} count="{len(uses)}" uniqueCount="{unique}">'
    table += "".join(f"<si><t>{text}</t></si>" for text in strings) + "</sst>"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in _XLSX_PARTS.items():
            archive.writestr(name, data)
        archive.writestr("xl/worksheets/sheet1.xml", sheet)
        archive.writestr("xl/sharedStrings.xml", table)
    return path
