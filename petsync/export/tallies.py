"""What an export counted: the pets written, per status, and the duplicates found."""

from __future__ import annotations

from dataclasses import dataclass

from petsync.formats.night import StatusCounts


@dataclass(frozen=True)
class CollectedPets:
    """What the export collected: the pets written, their statuses, the duplicates found."""

    pets: int
    statuses: StatusCounts
    rows_fetched: int
    seen_under_two_statuses: int
    conflicting_duplicates: int
    status_mismatches: int
    scratch_bytes: int = 0
