"""Settling uncertain rows from the API itself (``petsync import FILE --settle``).

A row is uncertain when its POST may have created a pet (a timeout after sending, a 5xx, a
kill mid-request). For each content (name, categoryId, status) of the uncertain rows,
:func:`settle_uncertain` lists the pets of that content now and takes away those that
existed before the first POST (the journal's :mod:`~petsync.importer.baseline`) and those
the journal already knows as created by this import. What is left, ``new``, can only be
pets this import's uncertain rows of that content created, unless someone else created
pets of the same content meanwhile. Then, with ``u`` uncertain rows of the content:

- ``new`` is empty: none of them was created; each is journaled ``unsent`` and the send
  pass sends it now, once;
- ``len(new) <= u``: that many were created: the first rows (by row number) are journaled
  ``created`` with the new ids in ascending order, the rest ``unsent`` (rows of equal
  content ask for the same pet, so which of them holds which id does not matter);
- ``len(new) > u``: more pets appeared than rows could have made: someone else added the
  same content; the rows stay uncertain, with the reason and the candidate ids.

It cannot decide (rows stay uncertain, saying why) without a baseline (a journal of an
older petsync), when a listing could not prove its end, or when rows without a status
and rows with one share a name and category and a new pet could belong to either.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass

from petsync.client.api import PetLister
from petsync.core.stop import StopRequest
from petsync.importer.baseline import Baseline, take_baseline
from petsync.importer.check import CheckedInput, PetContent, content_of
from petsync.importer.journal import Journal
from petsync.importer.row_states import RowRecord, RowState
from petsync.importer.validation import validate_row

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SettleResult:
    """What settling decided: rows found created, rows to send again, rows still unknown."""

    created: int = 0
    not_created: int = 0
    undecided: int = 0


def settle_uncertain(
    journal: Journal, checked: CheckedInput, client: PetLister, stop: StopRequest | None = None
) -> SettleResult:
    """Decide each uncertain row of ``journal`` from a fresh listing (see the module doc)."""
    uncertain = sorted(
        row
        for row, record in journal.states.items()
        if record.state in (RowState.UNCERTAIN, RowState.SENDING)
    )
    if not uncertain:
        return SettleResult()
    rows_by_content = _contents_of(checked, set(uncertain))
    baseline = journal.baseline
    if baseline is None:
        return _undecided(
            journal,
            rows_by_content,
            "settle cannot tell: this journal has no record of the pets that existed before "
            "its first POST (it was started by an older petsync); check these pets by hand",
        )
    if not baseline.complete:
        return _undecided(
            journal,
            rows_by_content,
            f"settle cannot tell: the listing before the first POST was incomplete "
            f"({baseline.reason}); check these pets by hand",
        )
    now = take_baseline(client, set(rows_by_content), stop)
    if not now.complete:
        return _undecided(
            journal,
            rows_by_content,
            f"settle cannot tell: the listing now is incomplete ({now.reason}); try again",
        )
    new = {
        key: sorted(
            i for i in now.ids(key) - baseline.ids(key) if not journal.states.has_created_id(i)
        )
        for key in rows_by_content
    }
    shared = _shared_ids(new)
    created = not_created = undecided = 0
    for key, rows in rows_by_content.items():
        fresh = new[key]
        if shared & set(fresh):
            undecided += _leave(
                journal,
                rows,
                "settle cannot tell: a new pet matches both rows without a status and rows "
                "with one of the same name and category",
                fresh,
            )
        elif len(fresh) > len(rows):
            undecided += _leave(
                journal,
                rows,
                f"settle cannot tell: {len(fresh)} pets with this content appeared since the "
                f"import began, for {len(rows)} uncertain rows: someone else added the same "
                "pet; check the candidate ids",
                fresh,
            )
        else:
            for row, pet_id in zip(rows, fresh, strict=False):
                journal.record(RowRecord(row, RowState.CREATED, id=pet_id))
                created += 1
            for row in rows[len(fresh) :]:
                journal.record(
                    RowRecord(
                        row,
                        RowState.UNSENT,
                        message="settled: no new pet with its content since the import began",
                    )
                )
                not_created += 1
    journal.sync()
    result = SettleResult(created, not_created, undecided)
    logger.info("import_settled", extra={"fields": result.__dict__})
    return result


def _contents_of(checked: CheckedInput, rows: set[int]) -> dict[PetContent, list[int]]:
    """The uncertain rows grouped by content, each group in row order."""
    grouped: dict[PetContent, list[int]] = defaultdict(list)
    with checked.reopen() as sheet:
        for row in sheet.rows():
            if row.number in rows:
                result = validate_row(row.cells, checked.columns, checked.width, row.cut)
                if result.pet is not None:  # a journaled row was valid when it was sent
                    grouped[content_of(result.pet)].append(row.number)
    return dict(grouped)


def _shared_ids(new: dict[PetContent, list[int]]) -> set[int]:
    seen: set[int] = set()
    shared: set[int] = set()
    for ids in new.values():
        shared |= seen & set(ids)
        seen |= set(ids)
    return shared


def _leave(journal: Journal, rows: list[int], reason: str, candidates: list[int]) -> int:
    for row in rows:
        journal.record(
            RowRecord(row, RowState.UNCERTAIN, message=reason, candidates=tuple(candidates))
        )
    return len(rows)


def _undecided(
    journal: Journal, rows_by_content: dict[PetContent, list[int]], reason: str
) -> SettleResult:
    count = sum(_leave(journal, rows, reason, []) for rows in rows_by_content.values())
    journal.sync()
    return SettleResult(undecided=count)


__all__ = ["Baseline", "SettleResult", "settle_uncertain"]
