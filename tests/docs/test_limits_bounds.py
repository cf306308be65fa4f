"""docs/limits.md's table states the numbers petsync.core.interface (and the client's
defaults) hold, and the options it names exist: the docs and the code cannot drift."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.client.config import DEFAULT_MAX_RESPONSE_BYTES
from petsync.core import interface
from tests.docs.markdown import DOCS, table_rows

ROWS = {row[0]: row for row in table_rows((DOCS / "limits.md").read_text(encoding="utf-8"))}

NUMBERS = {
    "characters in a cell": interface.CELL_LIMIT,
    "characters in a row": interface.ROW_CHAR_LIMIT,
    "cells in a row": interface.ROW_CELL_LIMIT,
    "columns of a sheet's used range": interface.SHEET_COLUMN_LIMIT,
    "cells of a sheet's used range": interface.SHEET_CELL_LIMIT,
    "bytes a workbook inflates to": interface.WORKBOOK_XML_LIMIT,
    "characters of a next link or cursor": interface.LINK_LENGTH_LIMIT,
    "bytes of one answer, decompressed": DEFAULT_MAX_RESPONSE_BYTES,
    "local clock against the API's `Date`": interface.CLOCK_TOLERANCE,
    "bytes of a job or config file": interface.SETTINGS_FILE_LIMIT,
    "bytes of an API key file": interface.KEY_FILE_LIMIT,
    "bytes of a spreadsheet": interface.SPREADSHEET_FILE_LIMIT,
    "bytes of a CA file": interface.CA_FILE_LIMIT,
    "bytes of the metrics file read back": interface.METRICS_FILE_LIMIT,
}


@pytest.mark.parametrize(("limit", "value"), NUMBERS.items(), ids=list(NUMBERS))
def test_the_table_states_the_number_the_code_holds(limit: str, value: float) -> None:
    stated = re.match(r"[\d,]+", ROWS[limit][2])
    assert stated is not None and int(stated.group().replace(",", "")) == value


def test_the_table_states_the_json_nesting_the_wire_reads() -> None:
    # The JSON reader is the wire's (petsync.client.body while it exists).
    body = pytest.importorskip("petsync.client.body")
    assert ROWS["nesting of a JSON answer"][2] == f"{body.MAX_JSON_DEPTH} levels"


@pytest.mark.parametrize("limit", [name for name, row in ROWS.items() if row[4] != "none"], ids=str)
def test_each_option_the_table_names_exists_on_export(limit: str) -> None:
    option = ROWS[limit][4].strip("`")
    help_text = CliRunner().invoke(cli, ["export", "--help"], terminal_width=200).stdout
    assert option in help_text
