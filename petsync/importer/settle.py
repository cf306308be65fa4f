"""Settling uncertain rows from the API itself (``petsync import FILE --settle``).

A row is uncertain when its POST may have created a pet (a timeout after sending, a 5xx, a
kill mid-request). For each content (name, categoryId, status) of the uncertain rows,
:func:`settle_uncertain` lists the pets of that content now and takes away those the
journal knows as created by this import: what is left, ``others``, holds every pet that
could be one of these rows' and every other pet of that content. With ``u`` uncertain
rows of the content, how far that goes depends on what else the journal proves:

Without a complete baseline (the default: no listing before the first POST), only an
empty answer decides. ``others`` empty: no pet of that content exists but this import's
known ones, so none of the rows was created; each is journaled ``unsent`` and the send
pass sends it now, once. Otherwise the rows stay uncertain with ``others`` as candidate
ids: nothing tells a pet that existed before the import from one these rows created. Ids
that an incomplete baseline listed are taken away too (each of them did exist before the
first POST; only pets it missed are unknown).

With a complete baseline (``--baseline``), ``new`` is ``others`` minus the baseline's ids:
pets that appeared since the first POST. Then:

- ``new`` is empty: none of the rows was created (journaled ``unsent``, sent once);
- ``len(new) <= u``: that many were created: the first rows (by row number) are journaled
  ``created`` with the new ids in ascending order, the rest ``unsent`` (rows of equal
  content ask for the same pet, so which of them holds which id does not matter);
- ``len(new) > u``: more pets appeared than rows could have made: someone else added the
  same content; the rows stay uncertain, with the reason and the candidate ids.

It cannot decide (rows stay uncertain, saying why) when a listing now could not prove its
end, or, with a baseline, when rows without a status and rows with one share a name and
category and a new pet could belong to either. Without a complete baseline, pets that the
other journals beside this one record as created by their own POSTs are no candidates
either (:mod:`~petsync.importer.other_journals`). docs/design.md ("Settling without a
baseline") says what each rule proves and what it assumes.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass

from petsync.client.api import PetLister
from petsync.core.stop import StopRequest
from petsync.importer.baseline import Baseline, take_baseline
from petsync.importer.checked_rows import PetContent
from petsync.importer.journal import Journal
from petsync.importer.other_journals import SETTLED_CREATED, ids_created_by_other_journals
from petsync.importer.precheck import CheckedInput
from petsync.importer.row_states import RowRecord, RowState

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Undecided:
    """Rows of one content that settling left uncertain, and the pets that may be theirs."""

    rows: tuple[int, ...]
    candidates: tuple[int, ...]


@dataclass(frozen=True)
class SettleResult:
    """What settling decided: rows found created, rows to send again, rows still unknown.

    ``undecided_rows`` lists the rows left uncertain by content, with their candidate ids
    (empty when nothing could be listed), for a person to check.
    """

    created: int = 0
    not_created: int = 0
    undecided: int = 0
    undecided_rows: tuple[Undecided, ...] = ()


NO_BASELINE_REASON = (
    "settle cannot tell: {count} pet(s) with this content exist that this import did not "
    "record creating, and it has no record of which existed before its first POST ({why}); "
    "check the candidate ids by hand"
)


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
    now = take_baseline(client, set(rows_by_content), stop)
    if not now.complete:
        return _undecided(
            journal,
            rows_by_content,
            f"settle cannot tell: the listing now is incomplete ({now.reason}); try again",
        )
    # Every pet of each content now, but those a row of this journal is known to have made.
    others = {
        key: sorted(i for i in now.ids(key) if not journal.states.has_created_id(i))
        for key in rows_by_content
    }
    baseline = journal.baseline
    decide = _with_baseline if baseline is not None and baseline.complete else _without_baseline
    result = decide(journal, rows_by_content, others, baseline or Baseline(complete=False))
    journal.sync()
    logger.info(
        "import_settled",
        extra={
            "fields": {
                "created": result.created,
                "not_created": result.not_created,
                "undecided": result.undecided,
                "baseline": baseline is not None and baseline.complete,
            }
        },
    )
    return result


def _without_baseline(
    journal: Journal,
    rows_by_content: dict[PetContent, list[int]],
    others: dict[PetContent, list[int]],
    baseline: Baseline,
) -> SettleResult:
    """Only "not created" is provable: no pet of the content but this import's exists.

    An incomplete baseline still proves that each id it holds existed before the first
    POST, and another journal's 201 that its id is another POST's pet: no candidates.
    """
    why = (
        f"the listing before it was incomplete: {baseline.reason}"
        if baseline.reason
        else "it ran without a baseline"
    )
    left_over = {key: [i for i in ids if i not in baseline.ids(key)] for key, ids in others.items()}
    elsewhere = ids_created_by_other_journals(
        journal.path.parent, journal.path, {i for ids in left_over.values() for i in ids}
    )
    not_created = undecided = 0
    left: list[Undecided] = []
    for key, rows in rows_by_content.items():
        candidates = [i for i in left_over[key] if i not in elsewhere]
        if candidates:
            reason = NO_BASELINE_REASON.format(count=len(candidates), why=why)
            undecided += _leave(journal, rows, reason, candidates)
            left.append(Undecided(tuple(rows), tuple(candidates)))
        else:
            not_created += _unsent(
                journal, rows, "settled: no pet with its content exists but this import's"
            )
    return SettleResult(0, not_created, undecided, tuple(left))


def _with_baseline(
    journal: Journal,
    rows_by_content: dict[PetContent, list[int]],
    others: dict[PetContent, list[int]],
    baseline: Baseline,
) -> SettleResult:
    """The pets new since the first POST are this import's (see the module doc)."""
    new = {key: [i for i in others[key] if i not in baseline.ids(key)] for key in others}
    shared = _shared_ids(new)
    created = not_created = undecided = 0
    left: list[Undecided] = []
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
            left.append(Undecided(tuple(rows), tuple(fresh)))
        elif len(fresh) > len(rows):
            undecided += _leave(
                journal,
                rows,
                f"settle cannot tell: {len(fresh)} pets with this content appeared since the "
                f"import began, for {len(rows)} uncertain rows: someone else added the same "
                "pet; check the candidate ids",
                fresh,
            )
            left.append(Undecided(tuple(rows), tuple(fresh)))
        else:
            for row, pet_id in zip(rows, fresh, strict=False):
                journal.record(RowRecord(row, RowState.CREATED, id=pet_id, message=SETTLED_CREATED))
                created += 1
            not_created += _unsent(
                journal,
                rows[len(fresh) :],
                "settled: no new pet with its content since the import began",
            )
    return SettleResult(created, not_created, undecided, tuple(left))


def _unsent(journal: Journal, rows: list[int], message: str) -> int:
    for row in rows:
        journal.record(RowRecord(row, RowState.UNSENT, message=message))
    return len(rows)


def _contents_of(checked: CheckedInput, rows: set[int]) -> dict[PetContent, list[int]]:
    """The uncertain rows grouped by content, each group in row order."""
    grouped: dict[PetContent, list[int]] = defaultdict(list)
    for row in checked.rows:
        if row.number in rows and row.content is not None:  # a journaled row was valid
            grouped[row.content].append(row.number)
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
    left = tuple(Undecided(tuple(rows), ()) for rows in rows_by_content.values())
    return SettleResult(undecided=count, undecided_rows=left)


__all__ = ["Baseline", "SettleResult", "Undecided", "settle_uncertain"]
