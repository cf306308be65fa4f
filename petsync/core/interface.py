"""The facts of the Petstore interface, and of how petsync reads what it leaves open.

One home for every constant that the client and the reference server must agree on, so
the two can never drift: the version segment, the ``limit`` bounds, the getPet sunset,
the pagination styles and the header and parameter of the ``cursor`` style (which the
interface does not show; petsync's own choice, used by both sides).
"""

from __future__ import annotations

from typing import Literal

API_VERSION = "1.0.0"  # the interface version this petsync speaks
VERSION_SEGMENT = "/v1"  # every base address ends with it

# listPets `limit`: minimum, maximum, and the server's default when it is absent.
LIMIT_MIN = 1
LIMIT_MAX = 100
LIMIT_DEFAULT = 20

# getPet is deprecated and scheduled for removal on this date.
GET_PET_SUNSET = "Thu, 05 Dec 2030 00:00:00 GMT"
GET_PET_SUNSET_TEXT = "5 December 2030"

# How a server may page listPets. The interface shows no control beyond `limit`; these
# are the styles petsync knows how to follow and its reference server can serve.
ServerPagination = Literal["link", "cursor", "offset", "page", "none"]
SERVER_PAGINATION_STYLES: tuple[ServerPagination, ...] = (
    "link",
    "cursor",
    "offset",
    "page",
    "none",
)
# The client may also be told to detect the style ("auto").
PaginationStyle = Literal["auto", "link", "cursor", "offset", "page", "none"]
PAGINATION_STYLES: tuple[PaginationStyle, ...] = ("auto", *SERVER_PAGINATION_STYLES)

# The `cursor` style: the server names the next page in a header; the client sends it back.
CURSOR_HEADER = "X-Next-Cursor"
CURSOR_PARAM = "cursor"


def limit_in_range(value: object) -> bool:
    """True for an ``int`` (not ``bool``) within the interface's ``limit`` bounds.

    >>> limit_in_range(100), limit_in_range(0), limit_in_range(True)
    (True, False, False)
    """
    return type(value) is int and LIMIT_MIN <= value <= LIMIT_MAX


# The fields of a Pet (Resources: Pet), in the interface's order of meaning. Any other key
# of a listed record is an *extra field* (matched exactly: `CategoryId` is extra).
PET_FIELDS: tuple[str, ...] = ("id", "name", "categoryId", "status")

# Bounds on input from outside petsync, where the interface says nothing ("Rate limits,
# request size limits and field length limits: not shown"). One home for the numbers that
# docs/limits.md tabulates; each keeps one odd input from costing more than its own row,
# pet or file.

# A spreadsheet row: characters one cell may hold (Python's csv default field limit,
# 128 Ki), characters of a whole row, and cells of a row. A row past any of them is
# rejected with its start kept; the rows after it are read on.
CELL_LIMIT = 131_072
ROW_CHAR_LIMIT = 1_048_576
ROW_CELL_LIMIT = 1_024
# A workbook sheet (every format): its used range, in columns and in cells (the reader
# holds the range as a grid), and the bytes its XML may inflate to.
SHEET_COLUMN_LIMIT = ROW_CELL_LIMIT
SHEET_CELL_LIMIT = 16_777_216
WORKBOOK_XML_LIMIT = 536_870_912
# The bytes a workbook's cells would hold once expanded: a shared string counts once for
# each cell that uses it, a repeated .ods cell once for each cell it stands for (the reader
# copies the text into every one). And the shared strings a workbook may list (the reader
# reserves room for the count the file announces).
WORKBOOK_TEXT_LIMIT = 268_435_456
SHARED_STRING_LIMIT = SHEET_CELL_LIMIT
# An .xls or .xlsb is read in a child process with this address space: a sheet at the cell
# limit peaks near 700 MiB when sparse; this leaves room for one full of values.
CHILD_MEMORY_LIMIT = 4 << 30
# ... and this much CPU time, in seconds: the reader loops forever on some damaged files.
CHILD_CPU_LIMIT = 300
# A next link (Link header) or cursor a listing follows, in characters.
LINK_LENGTH_LIMIT = 8_192
# How far the local clock may be from the servers' Date headers, in seconds.
CLOCK_TOLERANCE = 300.0
# A job or settings file (TOML), in bytes.
SETTINGS_FILE_LIMIT = 1_048_576
# A file named for an API key: the key and a newline; a few kilobytes is any real key.
KEY_FILE_LIMIT = 65_536
# A spreadsheet to import (CSV or workbook), in bytes, checked before it is hashed or read.
SPREADSHEET_FILE_LIMIT = 4 << 30
# A CA bundle (SSL_CERT_FILE): the system's is about 200 KiB.
CA_FILE_LIMIT = 16 << 20
# A metrics file petsync merges its samples into (it writes a few kilobytes).
METRICS_FILE_LIMIT = 16 << 20
