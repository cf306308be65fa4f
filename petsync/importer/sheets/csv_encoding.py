"""Encoding detection helpers of the CSV reader (:mod:`petsync.importer.sheets.csv_sheet`)."""

from __future__ import annotations

from pathlib import Path

from petsync.core.errors import InputError


def utf16_order(head: bytes) -> str | None:
    """``utf-16-le`` or ``utf-16-be`` when the NULs of ``head`` sit on one side of its
    byte pairs (as in UTF-16 text of mostly Latin letters), else None."""
    pairs = len(head) // 2
    odd = head[1 : pairs * 2 : 2].count(0)
    even = head[0 : pairs * 2 : 2].count(0)
    if odd > pairs // 2 and even == 0:
        return "utf-16-le"
    if even > pairs // 2 and odd == 0:
        return "utf-16-be"
    return None


def decode_error(path: Path, encoding: str, error: tuple[int, int, str]) -> InputError:
    line, offset, shown = error
    return InputError(
        f"{path}, line {line} (byte offset {offset}): the bytes {shown} are not valid "
        f"{encoding}; pass --encoding with the file's real encoding (for example cp1252, "
        "latin-1 or utf-16)"
    )
