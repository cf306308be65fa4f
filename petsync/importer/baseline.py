"""The catalogue as it stood before an import sent anything: what settling compares against.

Pets carry no key of the client's: the same name, category and status may legitimately
exist already, so finding a pet with a row's content proves nothing by itself. Before the
first POST of a journal, :func:`take_baseline` lists the pets with the contents the file
asks for (listPets per status the rows use, and unfiltered when a row has no status) and
the journal records, per content, the ids that already existed. Settling an uncertain row
later (:mod:`petsync.importer.settle`) counts the pets of its content that are *new* since.

Rows without a status match pets of any status with their name and category: the
interface does not say what status a pet created without one gets.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from petsync.client.api import PetLister
from petsync.core.interface import LIMIT_MAX
from petsync.core.models import Pet, PetStatus
from petsync.core.stop import StopRequest
from petsync.importer.checked_rows import PetContent


@dataclass(frozen=True)
class Baseline:
    """Per content, the ids of matching pets listed at one moment; whether that is all of them.

    ``complete`` is False when a listing could not prove its end (``reason`` says why): ids
    may then be missing, and nothing can be decided from it.
    """

    matches: Mapping[PetContent, frozenset[int]] = field(default_factory=dict)
    complete: bool = True
    reason: str | None = None

    def ids(self, content: PetContent) -> frozenset[int]:
        return self.matches.get(content, frozenset())

    def to_json(self) -> dict[str, Any]:
        return {
            "complete": self.complete,
            "reason": self.reason,
            "matches": [
                [name, category, status, sorted(ids)]
                for (name, category, status), ids in self.matches.items()
                if ids
            ],
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Baseline:
        matches: dict[PetContent, frozenset[int]] = {}
        for name, category, status, ids in obj.get("matches", []):
            matches[(str(name), int(category), status)] = frozenset(int(i) for i in ids)
        return cls(matches, bool(obj.get("complete")), obj.get("reason"))


def listings_for(contents: Iterable[PetContent]) -> list[PetStatus | None]:
    """The listPets calls that see every pet of ``contents``: per status, None = unfiltered.

    >>> listings_for([("Rex", 1, "sold"), ("Mia", 2, None)])
    [<PetStatus.SOLD: 'sold'>, None]
    """
    statuses = {status for _, _, status in contents}
    plan: list[PetStatus | None] = [s for s in PetStatus if s.value in statuses]
    if None in statuses:
        plan.append(None)
    return plan


def take_baseline(
    client: PetLister, contents: Collection[PetContent], stop: StopRequest | None = None
) -> Baseline:
    """List the pets that match ``contents`` now (a stop leaves the baseline incomplete)."""
    found: dict[PetContent, set[int]] = {}
    reasons: list[str] = []
    for status in listings_for(contents):
        listing = client.list_pets(status, limit=LIMIT_MAX)
        for page in listing:
            for pet in page.pets:
                key = _key(pet, status)
                if key in contents:
                    found.setdefault(key, set()).add(pet.id)
            if stop is not None and stop.requested:
                break
        if listing.complete is not True:
            label = status.value if status is not None else "unfiltered"
            reasons.append(f"listing {label}: {listing.incomplete_reason or 'stopped'}")
    return Baseline(
        {key: frozenset(ids) for key, ids in found.items()},
        complete=not reasons,
        reason="; ".join(reasons) or None,
    )


def _key(pet: Pet, listed: PetStatus | None) -> PetContent:
    # A status-filtered listing answers for rows with that status; the unfiltered one for
    # rows without a status, whatever status the pet shows.
    return (pet.name, pet.categoryId, listed.value if listed is not None else None)
