"""The encoding of a CSV file (:mod:`petsync.importer.sheets.csv_sheet`), from its bytes.

First rule that applies:

1. ``encoding=`` given (``--encoding``): decode strictly with it (a UTF-8 BOM is still
   dropped when the encoding is UTF-8).
2. A UTF-8 byte-order mark: UTF-8, BOM removed. A UTF-16 BOM: UTF-16. NUL bytes without a
   BOM: UTF-16 that lost its mark, little- or big-endian by the side its NULs are on, if
   the whole file decodes so; else the read stops with the ``--encoding`` to pass.
3. The whole file decodes as strict UTF-8: UTF-8.
4. Otherwise cp1252 (what Excel on Windows writes), with a notice for the summary; a byte
   cp1252 does not define stops the read. Replacement characters are never produced.
"""

from __future__ import annotations

import codecs
import hashlib
from pathlib import Path
from typing import BinaryIO

from petsync.core.errors import InputError
from petsync.core.settings_table import ENCODING
from petsync.core.wording import Placeholder, Said
from petsync.importer.sheets.sheet import CHUNK

_UTF8_BOM = codecs.BOM_UTF8
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)


def detect_encoding(
    source: BinaryIO, path: Path, forced: str | None
) -> tuple[str, str, str, Said | None]:
    """The sha256 of the bytes of ``source`` and their encoding (codec, label, notice),
    checked whole; ``forced``: the encoding given (``--encoding``).

    The whole file is decoded here, strictly, so a bad byte stops the import before any
    row is read, with its line and byte offset.
    """
    if forced is not None:
        try:
            codec = codecs.lookup(forced).name
        except LookupError as exc:
            raise InputError(
                ENCODING.given(Placeholder(repr(forced)))
                + " is not an encoding Python knows; try utf-8, cp1252, latin-1 or utf-16"
            ) from exc
        # A UTF-8 BOM is dropped even when the person names UTF-8.
        encoding = "utf-8-sig" if codec == "utf-8" else codec
        sha256, first, error = _decode_all(source, path, encoding)
        if error is not None:
            raise decode_error(path, codec, error)
        return sha256, encoding, codec, None
    sha256, first, error = _decode_all(source, path, "utf-8")
    head = _head(source, path)
    if first.startswith(b"PK\x03\x04"):
        raise InputError(
            f"{path}: this is a zip file (an .xlsx workbook?), not CSV; "
            "give it the .xlsx suffix to read it as a workbook"
        )
    if first.startswith(_UTF16_BOMS):
        _, _, error = _decode_all(source, path, "utf-16")
        if error is not None:
            raise decode_error(path, "utf-16", error)
        return sha256, "utf-16", "utf-16 (BOM)", None
    if b"\x00" in head:
        # UTF-16 that lost its mark: text in Latin letters has its NULs on one side.
        order = utf16_order(head)
        if order is not None and _decode_all(source, path, order)[2] is None:
            return sha256, order, f"{order} (no BOM)", None
        raise InputError(
            f"{path}: the file holds NUL bytes, as UTF-16 text without a byte-order mark "
            "does; pass " + ENCODING.given("utf-16-le") + " (or utf-16-be), or save it as CSV UTF-8"
        )
    if first.startswith(_UTF8_BOM):
        if error is not None:
            raise decode_error(path, "utf-8", error)
        return sha256, "utf-8-sig", "utf-8 (BOM)", None
    if error is None:
        return sha256, "utf-8", "utf-8", None
    _, _, cp_error = _decode_all(source, path, "cp1252")
    if cp_error is not None:
        raise decode_error(path, "utf-8 nor cp1252", cp_error)
    notice = (
        f"{path.name} is not valid UTF-8 (line {error[0]}, byte offset {error[1]}); read it "
        "as cp1252 (Windows Western European). If names look wrong, pass " + ENCODING
    )
    return sha256, "cp1252", "cp1252", notice


def _head(source: BinaryIO, path: Path) -> bytes:
    try:
        source.seek(0)
        return source.read(4096)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _decode_all(
    source: BinaryIO, path: Path, encoding: str
) -> tuple[str, bytes, tuple[int, int, str] | None]:
    """(sha256, first bytes, first error as (line, byte offset, bytes shown) or None) of
    ``source`` read from its start (each read after a look at the stop request)."""
    digest = hashlib.sha256()
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    error: tuple[int, int, str] | None = None
    offset = 0
    lines = 1
    first = b""
    try:
        source.seek(0)
        while True:
            chunk = source.read(CHUNK)
            if not offset:
                first = chunk[:4]
            digest.update(chunk)
            if error is None:
                try:
                    lines += decoder.decode(chunk, final=not chunk).count("\n")
                except UnicodeDecodeError as exc:
                    # Count the lines of the good part of this chunk for the message.
                    good = codecs.getincrementaldecoder(encoding)("replace")
                    lines += good.decode(chunk[: exc.start]).count("\n")
                    bad = exc.object[exc.start : exc.end]
                    error = (lines, offset + exc.start, repr(bytes(bad)))
            if not chunk:
                break
            offset += len(chunk)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return digest.hexdigest(), first, error


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
        f"{encoding}; pass "
        + ENCODING
        + " with the file's real encoding (for example cp1252, latin-1 or utf-16)"
    )
