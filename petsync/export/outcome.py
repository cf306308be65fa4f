"""What an export did, whether to trust it, and the manifest that records it on disk.

The result is judged twice before it is trusted: every listing must prove its end
(``complete``), and the pet count must not fall by more than ``max_drop`` from the previous
complete snapshot, nor to zero (:func:`check_drop`). Either problem becomes a warning that
says what to do (:func:`outcome_warnings`) and exit code 4.

:class:`ExportReport` holds the run's facts once; the snapshot's ``_manifest.json`` is built
from them (:meth:`ExportReport.to_manifest`), so the report and the file cannot disagree.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from petsync._version import __version__
from petsync.core.apikey import redact
from petsync.core.errors import ExitCode, IncompleteError
from petsync.core.interface import API_VERSION
from petsync.core.settings_table import KEEP, MAX_DROP
from petsync.core.wording import Said
from petsync.export.config import CSV_NULL, ExportConfig
from petsync.export.extra_fields import ExtraFieldsReport
from petsync.export.fetch import FetchResult, ListingResult
from petsync.export.tallies import CollectedPets
from petsync.formats.registry import format_named
from petsync.formats.schema import EXTRA_FIELDS_KEY
from petsync.storage.layout import SnapshotInfo


@dataclass(frozen=True)
class DropCheck:
    """The pet count compared with the previous complete snapshot."""

    pets: int
    previous_date: dt.date | None
    previous_pets: int | None
    max_drop: float
    flagged: bool
    reason: str | None

    @property
    def drop_fraction(self) -> float | None:
        if not self.previous_pets:
            return None
        return max(0.0, (self.previous_pets - self.pets) / self.previous_pets)

    def to_json(self) -> dict[str, Any]:
        fraction = self.drop_fraction
        return {
            "previous_snapshot_date": self.previous_date.isoformat()
            if self.previous_date
            else None,
            "previous_pets": self.previous_pets,
            "pets": self.pets,
            "drop_fraction": None if fraction is None else round(fraction, 6),
            "max_drop": self.max_drop,
            "flagged": self.flagged,
            "reason": self.reason,
        }


def check_drop(pets: int, previous: SnapshotInfo | None, max_drop: float) -> DropCheck:
    """Flag zero pets, or a fall of more than ``max_drop`` from the previous complete snapshot.

    >>> check_drop(0, None, 0.2).flagged
    True
    """
    prev_pets = previous.pets if previous is not None else None
    prev_date = previous.date if previous is not None else None
    reason: str | None = None
    if pets == 0:
        reason = "the export holds zero pets"
    elif prev_pets:
        fraction = (prev_pets - pets) / prev_pets
        if fraction > max_drop:
            reason = (
                f"the pet count fell by {fraction:.1%} (from {prev_pets} in the snapshot of "
                f"{prev_date} to {pets}), more than the allowed {max_drop:.0%}"
            )
    return DropCheck(pets, prev_date, prev_pets, max_drop, reason is not None, reason)


def outcome_warnings(fetched: FetchResult, drop: DropCheck, *, strict: bool) -> list[Said]:
    """What is wrong with a run's result and what to do, one warning per problem.

    With ``strict`` they explain a refusal to publish, each listing's reason included
    (nothing else keeps it); without, a snapshot published flagged: the listings are named,
    and their reasons are left to the listing lines and the manifest's
    ``incomplete_reasons`` rather than repeated.
    """
    warnings: list[Said] = []
    incomplete = [r.label for r in fetched.listings if not r.complete]
    if incomplete and strict:
        warnings.append(
            "The export could not be proven complete: "
            + "; ".join(fetched.incomplete_reasons)
            + ". Nothing was published. Check the server's paging (`petsync check`) and re-run."
        )
    elif incomplete:
        named = ", ".join(repr(label) for label in incomplete)
        warnings.append(
            f"The export could not be proven complete: listing {named} did not prove its "
            "end (why: its listing line, and incomplete_reasons in the manifest). The snapshot "
            "is published flagged and load_snapshot() keeps returning the latest trusted one. "
            "Check the server's paging (`petsync check`) and re-run."
        )
    if drop.flagged:
        warnings.append(
            f"Suspicious drop: {drop.reason}. An outage or a key with a narrower scope is "
            "more likely than a shrinking catalogue: check the key and the server, then re-run "
            "(raise " + MAX_DROP + " if the catalogue really shrank)."
        )
    return warnings


@dataclass(frozen=True)
class RunTiming:
    """When a run started and finished (wall clock), and how long it took (monotonic)."""

    started_at: dt.datetime
    finished_at: dt.datetime
    duration_seconds: float


@dataclass(frozen=True)
class ExportReport:
    """What an export did; the CLI renders it and exits with :attr:`exit_code`.

    The fields are the run's facts; the flat names callers read (``pets``, ``by_status``,
    ``listings``, ``warnings``...) and the :attr:`manifest` are derived from them.
    """

    config: ExportConfig
    snapshot_date: dt.date
    snapshot_path: Path | str | None  # a local path, or a URI on an object store
    fetched: FetchResult
    collected: CollectedPets
    drop: DropCheck
    timing: RunTiming
    pruned: list[Path | str] = field(default_factory=list)
    run_id: str = ""  # also in the Parquet footer (or the Delta commit): readers match them
    table_version: int | None = None  # the table version committed (a Delta or Iceberg table)
    extra_fields: ExtraFieldsReport = field(default_factory=lambda: ExtraFieldsReport("drop"))
    later_snapshots: tuple[dt.date, ...] = ()  # dated after this one: a clock that ran ahead

    @property
    def complete(self) -> bool:
        """True when every listing proved its end."""
        return self.fetched.complete

    @property
    def incomplete_reasons(self) -> list[str]:
        return self.fetched.incomplete_reasons

    @property
    def listings(self) -> list[ListingResult]:
        return self.fetched.listings

    @property
    def quarantined(self) -> int:
        return self.fetched.quarantined

    @property
    def pets(self) -> int:
        return self.collected.pets

    @property
    def by_status(self) -> dict[str, int]:
        return self.collected.statuses.by_status

    @property
    def no_status(self) -> int:
        return self.collected.statuses.no_status

    @property
    def unknown_status(self) -> dict[str, int]:
        return self.collected.statuses.unknown_status

    @property
    def duration_seconds(self) -> float:
        return self.timing.duration_seconds

    @property
    def pets_per_second(self) -> float:
        return self.pets / self.duration_seconds if self.duration_seconds > 0 else 0.0

    @property
    def warnings(self) -> list[Said]:
        """What is wrong with this snapshot and what to do, then, the night the API's extra
        fields change, what became of them (that one alone leaves the exit code 0)."""
        return (
            outcome_warnings(self.fetched, self.drop, strict=self.config.strict)
            + self.extra_fields.warnings()
        )

    @property
    def notices(self) -> list[Said]:
        """Warnings that leave this snapshot trusted (exit 0 stays 0)."""
        notices: list[Said] = []
        conflicting = self.collected.conflicting_duplicates
        if conflicting:
            notices.append(
                f"{conflicting} pets were listed twice with different contents (changed while "
                "the export ran?); each kept the unfiltered listing's copy, else the one under "
                "the later status (sold, pending, available), whichever thread finished last"
            )
        if self.later_snapshots:
            dates = ", ".join(d.isoformat() for d in self.later_snapshots)
            notices.append(
                f"snapshots dated after tonight's ({self.snapshot_date}) are in the archive: "
                f"{dates}. A run whose clock was ahead left them; they are not the latest for "
                "readers, the drop check or " + KEEP + ". Check them and remove them by hand."
            )
        return notices

    @property
    def exit_code(self) -> ExitCode:
        """0 when complete and plausible, 4 when published but not to be trusted blindly."""
        if self.complete and not self.drop.flagged:
            return ExitCode.OK
        return ExitCode.INCOMPLETE

    def raise_for_outcome(self) -> None:
        """Raise :class:`IncompleteError` (exit 4) when the snapshot is not to be trusted.

        The snapshot is written by then; the error's warnings say what is wrong and what
        to do.
        """
        if self.exit_code is not ExitCode.OK:
            state = "incomplete" if not self.complete else "suspicious"
            raise IncompleteError(
                f"snapshot {self.snapshot_date} was written but is {state}",
                warnings=tuple(self.warnings),
            )

    def metric_counts(self) -> dict[str, int]:
        """The run's counts for the metrics file, by metric name without ``petsync_``."""
        return {"pets_exported": self.pets}

    @cached_property
    def manifest(self) -> dict[str, Any]:
        """The snapshot's ``_manifest.json`` as a dict (see :meth:`to_manifest`)."""
        return self.to_manifest()

    def to_manifest(self) -> dict[str, Any]:
        """The manifest: counts, completeness and provenance, keys in their documented order.

        Users and tools read these keys; their names and order are a file format.
        """
        # A flagged snapshot's data goes under names the readers of pets/ skip.
        files = format_named(self.config.table_format).manifest_files(
            trusted=self.exit_code is ExitCode.OK, csv=self.config.writes_csv
        )
        collected, fetched, timing = self.collected, self.fetched, self.timing
        duration = timing.duration_seconds
        return {
            "snapshot_date": self.snapshot_date.isoformat(),
            "complete": self.complete,
            "incomplete_reasons": self.incomplete_reasons,
            "pets": collected.pets,
            "by_status": self.by_status,
            "no_status": self.no_status,
            "unknown_status": self.unknown_status,
            "rows_fetched": collected.rows_fetched,
            "seen_under_two_statuses": collected.seen_under_two_statuses,
            "conflicting_duplicates": collected.conflicting_duplicates,
            "status_mismatches": collected.status_mismatches,
            "quarantined": fetched.quarantined,
            "drop_check": self.drop.to_json(),
            "statuses": [s.value for s in self.config.statuses],
            "sweep": self.config.sweep,
            "pagination_styles": fetched.pagination_styles,
            "pages": fetched.pages,
            "requests": fetched.requests,
            "retries": fetched.retries,
            "listings": [r.to_json() for r in fetched.listings],
            "started_at": timing.started_at.isoformat(),
            "finished_at": timing.finished_at.isoformat(),
            "duration_seconds": round(duration, 3),
            "pets_per_second": round(collected.pets / duration, 1) if duration > 0 else None,
            # Bytes the run wrote to its scratch area (rows waiting for deduplication, the
            # sweep's pages, what did not fit the memory budget); removed after the run.
            "scratch_bytes": collected.scratch_bytes + fetched.scratch_bytes,
            "base_url": redact(self.config.client.base_url, [self.config.client.api_key]),
            "petsync_version": __version__,
            "api_version": API_VERSION,
            "run_id": self.run_id,
            "files": files,
            "csv_null": CSV_NULL,
            EXTRA_FIELDS_KEY: self.extra_fields.to_json(),
        }

    def manifest_text(self) -> str:
        """The manifest file's text: indented JSON, non-ASCII kept, one final newline."""
        return json.dumps(self.manifest, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
