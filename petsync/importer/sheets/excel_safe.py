"""The Excel-safe rule for CSV cells petsync writes, and its exact inverse.

Excel (and LibreOffice, Google Sheets) run a CSV cell as a formula when its text starts with
``=``, ``+``, ``-`` or ``@``, and a leading tab or carriage return is how formula-injection
payloads hide that first character. Every CSV file petsync writes therefore prefixes such a
cell with one apostrophe ``'``. So that the rule can be undone exactly, a cell that already
starts with an apostrophe gets one more::

    =SUM(A1)   ->  '=SUM(A1)
    -5         ->  '-5
    'Tis       ->  ''Tis
    Rex        ->  Rex

Reading a file petsync wrote (the spreadsheet reader knows one by its ``petsync_row``
column) removes exactly one leading apostrophe from every cell that has one, which gives
back the original text: a cell written with a prefix always starts with ``'``, and a cell
written without one never does.
"""

from __future__ import annotations

from collections.abc import Iterable

ESCAPE = "'"
# Characters that make a spreadsheet treat a cell as a formula, plus the escape itself so
# that the rule stays reversible.
UNSAFE_FIRST = frozenset({"=", "+", "-", "@", "\t", "\r", ESCAPE})


def escape_cell(text: str) -> str:
    """Return ``text`` safe to put in a CSV cell that Excel may open.

    >>> escape_cell("=1+2"), escape_cell("Rex"), escape_cell("'quoted")
    ("'=1+2", 'Rex', "''quoted")
    """
    if text and text[0] in UNSAFE_FIRST:
        return ESCAPE + text
    return text


def unescape_cell(text: str) -> str:
    """Undo :func:`escape_cell`: ``unescape_cell(escape_cell(s)) == s`` for every string.

    >>> unescape_cell("'=1+2"), unescape_cell("''quoted"), unescape_cell("Rex")
    ('=1+2', "'quoted", 'Rex')
    """
    if text.startswith(ESCAPE):
        return text[1:]
    return text


def escape_row(cells: Iterable[str]) -> list[str]:
    """Escape every cell of one row."""
    return [escape_cell(cell) for cell in cells]


def unescape_row(cells: Iterable[str]) -> list[str]:
    """Unescape every cell of one row read from a file petsync wrote."""
    return [unescape_cell(cell) for cell in cells]
