"""The Excel-safe rule: formula starters are prefixed, and petsync undoes it exactly."""

from __future__ import annotations

import pytest

from petsync.importer.sheets.excel_safe import escape_cell, escape_row, unescape_cell, unescape_row

CASES = [
    ("=SUM(A1:A9)", "'=SUM(A1:A9)"),
    ("+33 1 23", "'+33 1 23"),
    ("-5", "'-5"),
    ("@cmd", "'@cmd"),
    ("\tTab", "'\tTab"),
    ("\rCR", "'\rCR"),
    ("'Tis", "''Tis"),
    ("''", "'''"),
    ("Rex", "Rex"),
    ("", ""),
    ("a=b", "a=b"),
    (" =x", " =x"),
]


@pytest.mark.parametrize(("raw", "written"), CASES, ids=[repr(c[0]) for c in CASES])
def test_escape_prefixes_formula_starters_and_the_escape_itself(raw: str, written: str) -> None:
    assert escape_cell(raw) == written


@pytest.mark.parametrize(("raw", "written"), CASES, ids=[repr(c[0]) for c in CASES])
def test_unescape_restores_the_original_exactly(raw: str, written: str) -> None:
    assert unescape_cell(written) == raw


def test_no_escaped_cell_starts_a_formula() -> None:
    for raw, _ in CASES:
        assert escape_cell(raw)[:1] not in {"=", "+", "-", "@", "\t", "\r"}


def test_rows_round_trip() -> None:
    row = ["=1+2", "'x", "plain", "-1"]
    assert escape_row(row) == ["'=1+2", "''x", "plain", "'-1"]
    assert unescape_row(escape_row(row)) == row
