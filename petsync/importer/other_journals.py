"""Pets other imports made: ids that the journals beside this one got in a 201 answer.

Settling without a baseline (:mod:`petsync.importer.settle`) cannot tell a pet that existed
before the import from one its uncertain row created. A pet whose id another journal in the
same folder records as the API's answer to *that* journal's POST is neither: one createPet
makes one pet, so it is not the pet of this import's row, and it is no candidate. Ids that
a settle *assigned* (journaled with :data:`SETTLED_CREATED`) are skipped: they are that
settle's conclusion, not an answer from the API.

Only what ``--settle`` asks about is looked for, and each journal is read a line at a time:
the cost grows with the journals on disk, not with the catalogue.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

from petsync.core.errors import InputError
from petsync.core.reading import open_regular

# The message of a `created` line that settling wrote (not a 201): see the module doc.
SETTLED_CREATED = "settled: one of the new pets with its content since the import began"


def ids_created_by_other_journals(directory: Path, current: Path, ids: Collection[int]) -> set[int]:
    """Which of ``ids`` a petsync journal in ``directory`` (other than ``current``) records
    as created by one of its POSTs.

    >>> ids_created_by_other_journals(Path("/nonexistent"), Path("j.jsonl"), [1, 2])
    set()
    """
    wanted = set(ids)
    found: set[int] = set()
    if not wanted or not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.jsonl")):
        if path == current:
            continue
        try:
            with open_regular(path, "journal", limit=None) as handle:  # never a FIFO
                if not _is_journal(handle.readline()):
                    continue
                for line in handle:  # bounded by the file; one line in memory at a time
                    if b'"created"' not in line:
                        continue
                    pet_id = _answered_id(line)
                    if pet_id in wanted:
                        found.add(pet_id)
        except (OSError, InputError):
            continue  # unreadable, or a FIFO: it narrows nothing, which is always safe
    return found


def _is_journal(first: bytes) -> bool:
    try:
        header = json.loads(first)
    except ValueError:
        return False
    return isinstance(header, dict) and "petsync_journal" in header


def _answered_id(line: bytes) -> int | None:
    """The id of a `created` line written on a 201 answer; None for any other line."""
    try:
        obj = json.loads(line)
    except ValueError:  # a line torn by a crash
        return None
    if not isinstance(obj, dict) or obj.get("state") != "created":
        return None
    if obj.get("message") == SETTLED_CREATED:
        return None
    pet_id = obj.get("id")
    return pet_id if isinstance(pet_id, int) and not isinstance(pet_id, bool) else None
