"""What an export counted: the pets written, per status, and the duplicates found."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from petsync.core.models import STATUS_VALUES


@dataclass
class StatusCounts:
    """Pets per enum status, without status, and per unknown status value."""

    by_status: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATUS_VALUES, 0))
    no_status: int = 0
    unknown_status: dict[str, int] = field(default_factory=dict)

    def add(self, column: pa.Array) -> None:
        for item in pc.value_counts(column).to_pylist():
            value, count = item["values"], int(item["counts"])
            if value is None:
                self.no_status += count
            elif value in self.by_status:
                self.by_status[value] += count
            else:
                self.unknown_status[value] = self.unknown_status.get(value, 0) + count
        self.unknown_status = dict(sorted(self.unknown_status.items()))


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
