"""A workbook's zip members inflated a megabyte at a time, the total held to a budget.

A workbook is a zip of XML (``.xlsx``, ``.ods``) or binary records (``.xlsb``): a few
kilobytes may inflate to gigabytes. Whatever petsync measures in a workbook before the
reader expands it is read through here, never by ``ZipFile.read``: each chunk is counted
against :data:`~petsync.core.interface.WORKBOOK_XML_LIMIT` before it is looked at, and a
member read whole (a workbook's list of sheets) is refused past a small size.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from petsync.core.errors import InputError
from petsync.core.interface import WORKBOOK_XML_LIMIT

CHUNK = 1 << 20
# What a damaged zip raises while it is read (calamine then says what is wrong with it).
DAMAGED_ZIP = (zipfile.BadZipFile, zlib.error, EOFError, ValueError, KeyError, NotImplementedError)
_SMALL_PART_LIMIT = 64 << 20  # a list of sheets or relationships: names and ids only


class UnmeasuredWorkbook(Exception):
    """A workbook the measure could not read through (a damaged or unusual zip): never
    shown to the user, it sends the file to the reader in a bounded child process
    (:mod:`.isolated_read`), where a bomb costs that process only."""


class InflationBudget:
    """The bytes a workbook's members inflate to, in all; refused past ``limit``."""

    def __init__(self, path: Path, limit: int | None = None) -> None:
        self.path = path
        self.limit = WORKBOOK_XML_LIMIT if limit is None else limit
        self.used = 0

    def take(self, size: int, member: str) -> None:
        self.used += size
        if self.used > self.limit:
            raise InputError(
                f"{self.path}: the workbook inflates to more than {self.limit} bytes "
                f"(at {member!r}); petsync reads workbooks up to that size. Save the sheet as "
                "CSV UTF-8, which petsync reads a row at a time, or split it"
            )


@contextmanager
def member_chunks(
    archive: zipfile.ZipFile, name: str | zipfile.ZipInfo, budget: InflationBudget
) -> Iterator[Iterator[bytes]]:
    """The inflated bytes of one member, a chunk at a time, each counted first; the member
    is closed on leaving the ``with``, whether or not every chunk was read."""
    info = name if isinstance(name, zipfile.ZipInfo) else archive.getinfo(name)
    with archive.open(info) as member:
        yield _counted(member, budget, info.filename)


def _counted(member: IO[bytes], budget: InflationBudget, name: str) -> Iterator[bytes]:
    while chunk := member.read(CHUNK):
        budget.take(len(chunk), name)
        yield chunk


def skip_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: InflationBudget) -> None:
    """Inflate a member only to count it against the budget."""
    with member_chunks(archive, info, budget) as chunks:
        for _ in chunks:
            pass


def read_small(archive: zipfile.ZipFile, name: str, budget: InflationBudget) -> bytes:
    """A member that lists names and ids (never cells), whole; ValueError past 64 MiB."""
    data = bytearray()
    with member_chunks(archive, name, budget) as chunks:
        for chunk in chunks:
            data += chunk
            if len(data) > _SMALL_PART_LIMIT:
                raise ValueError(f"{name} is too large")
    return bytes(data)


def whole_tags(chunks: Iterator[bytes], tag_limit: int = CHUNK) -> Iterator[tuple[int, bytes]]:
    """The chunks as ``(offset, buffer)``: each buffer ends before its last ``<``, which the
    next buffer starts with, so no tag is cut in two.

    Text after the last ``<`` of a chunk waits for the next one only up to ``tag_limit``
    bytes; past that, what follows the tag is text and is dropped (its bytes were
    counted). A tag itself longer than that is a ValueError: no sheet writes one.
    """
    carry = b""
    offset = 0  # where carry (and so the next buffer) starts in the member
    for chunk in chunks:
        buffer = carry + chunk
        end = buffer.rfind(b"<")
        if end < 0:
            yield offset, buffer
            offset += len(buffer)
            carry = b""
            continue
        yield offset, buffer[:end]
        carry = buffer[end:]
        offset += end
        if len(carry) > tag_limit:
            close = carry.find(b">")
            if close < 0:
                raise ValueError("a tag too long for a workbook")
            # The tag is whole: the rest is text without a tag (no "<" in it).
            yield offset, carry[: close + 1]
            offset += len(carry)
            carry = b""
    if carry:
        yield offset, carry
