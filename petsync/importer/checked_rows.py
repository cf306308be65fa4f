"""The checked rows: what the check stage found of each row, handed on to the stages after it.

The check stage reads the input once. Each row's verdict (the pet to create or its errors,
what was normalised, its number in the first file, the cells the output files repeat) goes
to a spool file in a private working folder, a block of rows at a time, so the import's
memory stays bounded by a block, not by the file. The plan, send and write stages iterate
the :class:`CheckedRows`: none of them opens the input again, so what they send and write
is what was checked, whatever the file holds by then.

Two facts are known only once every row was read: whether a fix file is read by its rows'
identity (some row names its first file), and which rows repeat an earlier one. The spool
keeps what a row needs for either answer, and iterating it applies them.
"""

from __future__ import annotations

import pickle
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

from petsync.core.models import NewPet, PetStatus
from petsync.importer.duplicates import RepeatedRows
from petsync.importer.validation import FieldError

# Rows pickled together: the spool's unit of memory and of I/O.
_BLOCK = 2048
_STATUSES = {status.value: status for status in PetStatus}  # a content's status, as sent


# What a row asks the API to create: (name, categoryId, status or None). Rows with equal
# content ask for the same pet; the settle step compares pets by it.
PetContent = tuple[str, int, str | None]


def content_of(pet: NewPet) -> PetContent:
    """The content key of a pet to create.

    >>> content_of(NewPet(name="Rex", categoryId=1))
    ('Rex', 1, None)
    """
    return (pet.name, pet.categoryId, None if pet.status is None else pet.status.value)


class CheckedRow(NamedTuple):
    """One row as the check stage left it.

    ``number`` is the row's key in the journal (its ``petsync_row`` in a fix file read by
    identity, else its ``line`` in this file); ``original`` its number in the first sheet
    it came from, which the output files write. ``content`` is the pet to create
    (:attr:`pet`), or None and ``errors`` say why not; ``whole`` is True when the row is
    rejected as a whole (a cell that cannot be read, a fix row of no known identity),
    never by its cells alone.
    ``repeat_of`` is the earlier row it repeats when repeats are not sent; ``carried``
    its cells under the output files' header.
    """

    number: int
    line: int
    original: int
    content: PetContent | None
    errors: tuple[FieldError, ...]
    normalisations: tuple[str, ...]
    whole: bool
    repeat_of: int | None
    carried: tuple[str, ...]

    @property
    def pet(self) -> NewPet | None:
        """The pet to create, or None. (Kept as its content, a tuple: pickled and read back
        faster than the object, which only the send stage asks for.)"""
        if self.content is None:
            return None
        name, category, status = self.content
        return NewPet(name, category, None if status is None else _STATUSES[status])


# As spooled: (number by identity, line, number in the first sheet otherwise, content, errors,
# normalisations, rejected as a whole, errors when read by identity (None: not refused by
# it), carried).
_Entry = tuple[
    int,
    int,
    int,
    PetContent | None,
    tuple[FieldError, ...],
    tuple[str, ...],
    bool,
    tuple[FieldError, ...] | None,
    tuple[str, ...],
]


class CheckedRows:
    """The spool of one check: :meth:`add` each row in order, :meth:`finish` with what the
    end of the pass decided, then iterate it as often as the stages need.

    The working folder is made afresh in the system's temporary directory (mode 0700: the
    rows are the user's data) and removed by :meth:`close`, or when the object is collected.
    """

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="petsync-rows-"))
        self._remove = weakref.finalize(self, shutil.rmtree, self._dir, True)
        self._path = self._dir / "rows.pickle"
        self._out: BinaryIO | None = self._path.open("wb")
        self._block: list[_Entry] = []
        self._by_identity = False
        self._repeats: RepeatedRows | None = None

    def add(
        self,
        identity_number: int,
        line: int,
        original: int,
        pet: NewPet | None,
        errors: tuple[FieldError, ...],
        normalisations: tuple[str, ...],
        whole: bool,
        identity_errors: tuple[FieldError, ...] | None,
        carried: tuple[str, ...],
    ) -> None:
        """Spool one row: its number by identity and its ``line``, its number in the first
        sheet when not read by identity (its ``petsync_row``, else its line), its verdict by
        its cells, and (``identity_errors``) the errors that reject it should the file be
        read by identity."""
        entry = (
            identity_number,
            line,
            original,
            None if pet is None else content_of(pet),
            errors,
            normalisations,
            whole,
            identity_errors,
            carried,
        )
        self._block.append(entry)
        if len(self._block) >= _BLOCK:
            self._flush()

    def finish(self, *, by_identity: bool, repeats: RepeatedRows | None) -> None:
        """Every row was added: ``by_identity`` for a fix file read by its rows' identity;
        ``repeats`` (None when repeats are sent) names the rows that repeat another; its
        owner closes it."""
        self._flush()
        if self._out is not None:
            self._out.close()
            self._out = None
        self._by_identity = by_identity
        self._repeats = repeats

    def __iter__(self) -> Iterator[CheckedRow]:
        """Every checked row, in the file's order (each iteration reads the spool afresh)."""
        by_identity, repeats = self._by_identity, self._repeats
        with self._path.open("rb") as handle:
            while True:
                try:
                    block: list[_Entry] = pickle.load(handle)
                except EOFError:
                    return
                for entry in block:
                    identity, line, original, content, errors = entry[:5]
                    normalised, whole, refused, carried = entry[5:]
                    number = line
                    if by_identity:
                        number = original = identity
                        if refused is not None:
                            content, errors, normalised, whole = None, refused, (), True
                    repeat_of = None
                    if repeats is not None and content is not None:
                        repeat_of = repeats.first_of(line)
                    yield CheckedRow(
                        number,
                        line,
                        original,
                        content,
                        errors,
                        normalised,
                        whole,
                        repeat_of,
                        carried,
                    )

    def close(self) -> None:
        """Remove the spool."""
        if self._out is not None:
            self._out.close()
            self._out = None
        self._remove()

    def _flush(self) -> None:
        if self._block and self._out is not None:
            pickle.dump(self._block, self._out, protocol=pickle.HIGHEST_PROTOCOL)
            self._block = []
