"""A child process that reads workbooks for the fuzz suite under an address-space limit.

Started once per test module (``python -m tests.fuzz.workbook_worker LIMIT``), it sets
``RLIMIT_AS`` to LIMIT bytes, scales the workbook bounds down to :data:`BOUNDS` (so that
generated files land on both sides of them in milliseconds), then reads one path per line
of stdin with :func:`open_spreadsheet` and answers one JSON line per path: the refusal, or the
rows' shape (grid cells, bytes of text) and the peak resident memory so far. A workbook
that escapes the measurement makes this process run out of memory and die: the test sees
its answer missing.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path

CELL_LIMIT = 200_000
TEXT_LIMIT = 4 << 20
XML_LIMIT = 8 << 20
# The scaled bounds: (module, name) -> value.
BOUNDS = {
    ("petsync.importer.sheets.inflating", "WORKBOOK_XML_LIMIT"): XML_LIMIT,
    ("petsync.importer.sheets.ods_content", "WORKBOOK_TEXT_LIMIT"): TEXT_LIMIT,
    ("petsync.importer.sheets.shared_strings", "WORKBOOK_TEXT_LIMIT"): TEXT_LIMIT,
    ("petsync.importer.sheets.ods_content", "SHEET_CELL_LIMIT"): CELL_LIMIT,
    ("petsync.importer.sheets.sheet_range", "SHEET_CELL_LIMIT"): CELL_LIMIT,
    ("petsync.importer.sheets.shared_strings", "SHARED_STRING_LIMIT"): CELL_LIMIT,
}


def _scale_bounds() -> None:
    import importlib

    for (module, name), value in BOUNDS.items():
        setattr(importlib.import_module(module), name, value)


def main() -> int:
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _scale_bounds()
    from petsync.core.errors import InputError
    from petsync.importer.sheets.opening import open_spreadsheet

    for line in sys.stdin:
        path = Path(line.rstrip("\n"))
        answer: dict[str, object]
        try:
            sheet = open_spreadsheet(path)
            records = sheet.cached_records or []
            width = max((len(cells) for _, cells, _ in records), default=0)
            answer = {
                "rows": len(records),
                "cells": len(records) * width,
                "text": sum(len(cell.encode()) for _, cells, _ in records for cell in cells),
                "problems": len(sheet.cell_problems),
            }
        except InputError as exc:
            answer = {"refused": str(exc)}
        answer["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
