"""The export job: page every listing of the catalogue into one dated snapshot.

:func:`run_export` pages ``GET /pets`` once per status (``available``, ``pending``, ``sold``)
and, unless told not to, once unfiltered (the interface does not say what status a pet
created without one has, so only an unfiltered sweep is sure to see pets with no status or
an unknown one). The listings run concurrently in threads sharing one client. Pets are
deduplicated by id (see :mod:`petsync.export.collector`), records that break the interface go to
the quarantine file, and the snapshot is published atomically (see :mod:`petsync.export.publish`)
under an exclusive directory lock (see :mod:`petsync.export.lock`).

The result is judged twice before it is trusted: every listing must prove its end
(``complete``), and the pet count must not fall by more than ``max_drop`` from the previous
complete snapshot, nor to zero. Either problem is written into the manifest and the report
(exit code 4); with ``strict`` the snapshot is not published at all and the run fails.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from petsync._version import __version__
from petsync.client.client import PetstoreClient
from petsync.client.listing import InvalidRecord
from petsync.core.apikey import redact
from petsync.core.errors import ExitCode, IncompleteError, PetsyncError
from petsync.core.interface import API_VERSION
from petsync.core.models import PetStatus
from petsync.export.collector import Deduplicated, PetCollector, StatusCounts, source_of
from petsync.export.config import CSV_NULL, SWEEP_LABEL, ExportConfig
from petsync.export.lock import DirectoryLock
from petsync.export.publish import StagedSnapshot, clean_staging, prune_snapshots
from petsync.export.snapshot import (
    CSV_NAME,
    MANIFEST_NAME,
    PARQUET_NAME,
    QUARANTINE_NAME,
    SnapshotInfo,
    latest_snapshot,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ListingResult:
    """How one listing went: pages, requests, pets, and whether its end was proven."""

    label: str
    style: str
    pages: int
    requests: int
    retries: int
    pets: int
    invalid: int
    complete: bool
    incomplete_reason: str | None
    seconds: float
    duplicates_dropped: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "listing": self.label,
            "pagination_style": self.style,
            "pages": self.pages,
            "requests": self.requests,
            "retries": self.retries,
            "pets": self.pets,
            "invalid": self.invalid,
            "duplicates_dropped": self.duplicates_dropped,
            "complete": self.complete,
            "incomplete_reason": self.incomplete_reason,
            "seconds": round(self.seconds, 3),
        }


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


@dataclass(frozen=True)
class ExportReport:
    """What an export did; ``cli.py`` renders it and exits with :attr:`exit_code`."""

    snapshot_date: dt.date
    snapshot_path: Path | None
    complete: bool
    incomplete_reasons: list[str]
    drop: DropCheck
    pets: int
    by_status: dict[str, int]
    no_status: int
    unknown_status: dict[str, int]
    quarantined: int
    listings: list[ListingResult]
    duration_seconds: float
    manifest: dict[str, Any]
    pruned: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        """0 when complete and plausible, 4 when published but not to be trusted blindly."""
        if self.complete and not self.drop.flagged:
            return ExitCode.OK
        return ExitCode.INCOMPLETE

    @property
    def pets_per_second(self) -> float:
        return self.pets / self.duration_seconds if self.duration_seconds > 0 else 0.0

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


class ExportProgress(Protocol):
    """Receives progress events; called from worker threads, so implementations lock."""

    def listing_started(self, label: str) -> None: ...

    def page_done(self, label: str, pages: int, pets: int) -> None: ...

    def listing_done(self, result: ListingResult) -> None: ...


class _NoProgress:
    def listing_started(self, label: str) -> None:
        pass

    def page_done(self, label: str, pages: int, pets: int) -> None:
        pass

    def listing_done(self, result: ListingResult) -> None:
        pass


class _Quarantine:
    """Appends invalid records to the staged quarantine file as JSON lines (thread-safe)."""

    def __init__(self, path: Path, keys: Iterable[object]) -> None:
        self.path = path
        self.count = 0
        self._lock = threading.Lock()
        self._keys = [k for k in keys if k is not None]
        self._handle = open(path, "w", encoding="utf-8", newline="\n")  # noqa: SIM115

    def add(self, label: str, records: list[InvalidRecord]) -> None:
        if not records:
            return
        lines = [
            json.dumps(
                {
                    "listing": label,
                    "reason": r.reason,
                    "url": redact(r.url, self._keys),  # type: ignore[arg-type]
                    "record": r.record,
                },
                ensure_ascii=False,
                default=repr,
            )
            + "\n"
            for r in records
        ]
        with self._lock:
            self._handle.writelines(lines)
            self.count += len(records)

    def close(self) -> None:
        self._handle.close()


def run_export(
    config: ExportConfig,
    *,
    client: PetstoreClient | None = None,
    today: dt.date | None = None,
    now: Callable[[], dt.datetime] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    progress: ExportProgress | None = None,
) -> ExportReport:
    """Export the catalogue into a new snapshot under ``config.out_dir``; return the report.

    ``today`` names the snapshot (default: the UTC date of ``now()``); ``client`` lets a
    caller share or instrument the client (it is not closed here). Raises
    :class:`~petsync.core.errors.LockedError` when another run holds the directory, any client
    error when a listing fails outright (nothing is published then), and
    :class:`~petsync.core.errors.PetsyncError` (exit 1) when ``strict`` refuses to publish.

    >>> report = run_export(ExportConfig(client=cfg, out_dir=Path("out")))  # doctest: +SKIP
    >>> report.complete, report.pets, report.snapshot_path                  # doctest: +SKIP
    (True, 10000, PosixPath('out/pets/snapshot_date=2026-11-22'))
    """
    clock_now = now or (lambda: dt.datetime.now(dt.UTC))
    started_at = clock_now()
    date = today or started_at.astimezone(dt.UTC).date()
    sink: ExportProgress = progress or _NoProgress()
    try:
        with DirectoryLock(config.out_dir):
            stale = clean_staging(config.out_dir)
            if stale:
                logger.info("export.staging_cleaned", extra={"fields": {"removed": len(stale)}})
            previous = latest_snapshot(config.out_dir)
            staged = StagedSnapshot.create(config.out_dir)
            try:
                report = _export_into(
                    config, staged, date, previous, client, clock_now, started_at, monotonic, sink
                )
            except BaseException:
                staged.discard()
                raise
    except OSError as exc:
        # The one boundary for file-system failures: disk full, permissions, a read-only
        # mount. Nothing was published, so earlier snapshots are as they were.
        where = exc.filename or config.out_dir
        raise PetsyncError(
            f"cannot write the snapshot under {config.out_dir}: {exc.strerror or exc} "
            f"({where}). Nothing was published; earlier snapshots are untouched. Free space "
            "or fix permissions, or choose another --out."
        ) from exc
    return report


def _export_into(
    config: ExportConfig,
    staged: StagedSnapshot,
    date: dt.date,
    previous: SnapshotInfo | None,
    client: PetstoreClient | None,
    clock_now: Callable[[], dt.datetime],
    started_at: dt.datetime,
    monotonic: Callable[[], float],
    sink: ExportProgress,
) -> ExportReport:
    start = monotonic()
    own_client = client is None
    active = client if client is not None else PetstoreClient(config.client)
    requests_before, retries_before = active.requests, active.retries
    quarantine = _Quarantine(staged.file(QUARANTINE_NAME), [config.client.api_key])
    # Fetched rows wait in a scratch file beside the staged snapshot (never published).
    spill = staged.scratch(".rows.arrow")
    collector = PetCollector(spill)
    try:
        try:
            listings = _fetch_all(config, active, collector, quarantine, monotonic, sink)
            requests = active.requests - requests_before
            retries = active.retries - retries_before
        except BaseException:
            collector.close()
            raise
        finally:
            quarantine.close()
            if own_client:
                active.close()
        return _publish(
            config,
            staged,
            date,
            previous,
            collector.finish(),
            listings,
            quarantine.count,
            requests,
            retries,
            clock_now,
            started_at,
            monotonic,
            start,
        )
    finally:
        spill.unlink(missing_ok=True)


def _publish(
    config: ExportConfig,
    staged: StagedSnapshot,
    date: dt.date,
    previous: SnapshotInfo | None,
    collected: Deduplicated,
    listings: list[ListingResult],
    quarantined: int,
    requests: int,
    retries: int,
    clock_now: Callable[[], dt.datetime],
    started_at: dt.datetime,
    monotonic: Callable[[], float],
    start: float,
) -> ExportReport:
    """Judge the collected pets, write the snapshot files and publish them."""

    reasons = [
        f"listing {r.label!r}: {r.incomplete_reason or 'its end could not be proven'}"
        for r in listings
        if not r.complete
    ]
    complete = not reasons
    drop = check_drop(collected.pets, previous, config.max_drop)
    warnings = _warnings(reasons, drop, config.strict)
    if config.strict and warnings:
        raise PetsyncError(
            "export refused to publish (--strict): "
            + " ".join(warnings)
            + " The previous snapshot stays the latest."
        )

    counts = collected.write(
        staged.file(PARQUET_NAME), staged.file(CSV_NAME) if config.format == "both" else None
    )
    duration = monotonic() - start
    manifest = _manifest(
        config,
        date,
        started_at,
        clock_now(),
        duration,
        collected,
        counts,
        listings,
        complete,
        reasons,
        drop,
        quarantined,
        requests,
        retries,
    )
    staged.write_text(
        MANIFEST_NAME, json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
    )
    path = staged.publish(date)
    pruned: list[Path] = []
    if config.keep is not None and complete and not drop.flagged:
        pruned = prune_snapshots(config.out_dir, config.keep)
    logger.info(
        "export.published",
        extra={
            "fields": {
                "snapshot": str(path),
                "pets": collected.pets,
                "complete": complete,
                "drop_flagged": drop.flagged,
                "pruned": len(pruned),
            }
        },
    )
    for warning in warnings:
        logger.warning("export.warning", extra={"fields": {"message": warning}})
    return ExportReport(
        snapshot_date=date,
        snapshot_path=path,
        complete=complete,
        incomplete_reasons=reasons,
        drop=drop,
        pets=collected.pets,
        by_status=counts.by_status,
        no_status=counts.no_status,
        unknown_status=counts.unknown_status,
        quarantined=quarantined,
        listings=listings,
        duration_seconds=duration,
        manifest=manifest,
        pruned=pruned,
        warnings=warnings,
    )


def _fetch_all(
    config: ExportConfig,
    client: PetstoreClient,
    collector: PetCollector,
    quarantine: _Quarantine,
    monotonic: Callable[[], float],
    sink: ExportProgress,
) -> list[ListingResult]:
    """Run every listing (concurrently up to ``config.concurrency``); fail fast on errors."""
    plan: list[PetStatus | None] = list(config.statuses)
    if config.sweep:
        plan.append(None)
    stop = threading.Event()

    def fetch(status: PetStatus | None) -> ListingResult:
        label = SWEEP_LABEL if status is None else status.value
        source = source_of(status)
        sink.listing_started(label)
        began = monotonic()
        listing = client.list_pets(status, limit=config.page_limit)
        pets = invalid = 0
        for pages, page in enumerate(listing, start=1):
            collector.add(source, page.pets)
            quarantine.add(label, page.invalid)
            pets += len(page.pets)
            invalid += len(page.invalid)
            sink.page_done(label, pages, pets)
            if stop.is_set():  # another listing failed: the run is lost, stop paging
                break
        result = ListingResult(
            label=label,
            style=listing.style,
            pages=listing.pages,
            requests=listing.requests,
            retries=listing.retries,
            pets=pets,
            invalid=invalid,
            complete=listing.complete is True,
            incomplete_reason=listing.incomplete_reason,
            seconds=monotonic() - began,
            # Records the client dropped because this same listing had already sent them.
            duplicates_dropped=getattr(listing, "duplicates", 0),
        )
        sink.listing_done(result)
        logger.info("export.listing_done", extra={"fields": result.to_json()})
        return result

    with ThreadPoolExecutor(
        max_workers=min(config.concurrency, len(plan)), thread_name_prefix="petsync-export"
    ) as pool:
        futures: list[Future[ListingResult]] = [pool.submit(fetch, s) for s in plan]
        try:
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in futures if f.done() and f.exception() is not None]
            if failed:
                stop.set()
                for future in futures:
                    future.cancel()
                raise failed[0].exception()  # type: ignore[misc]
        except BaseException:
            stop.set()
            raise
        return [f.result() for f in futures]


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


def _warnings(reasons: list[str], drop: DropCheck, strict: bool) -> list[str]:
    warnings: list[str] = []
    if reasons:
        what = (
            "Nothing was published."
            if strict
            else "The snapshot is written with complete: false and load_snapshot() keeps "
            "returning the previous complete one."
        )
        warnings.append(
            "The export could not be proven complete: "
            + "; ".join(reasons)
            + f". {what} Check the server's paging (`petsync check`) and re-run"
            + ("." if strict else "; pass --strict to refuse publishing an incomplete snapshot.")
        )
    if drop.flagged:
        warnings.append(
            f"Suspicious drop: {drop.reason}. An outage or a key with a narrower scope is "
            "more likely than a shrinking catalogue: check the key and the server, then re-run "
            "(raise --max-drop if the catalogue really shrank)."
        )
    return warnings


def _manifest(
    config: ExportConfig,
    date: dt.date,
    started_at: dt.datetime,
    finished_at: dt.datetime,
    duration: float,
    collected: Deduplicated,
    counts: StatusCounts,
    listings: list[ListingResult],
    complete: bool,
    reasons: list[str],
    drop: DropCheck,
    quarantined: int,
    requests: int,
    retries: int,
) -> dict[str, Any]:
    files: dict[str, str] = {"parquet": PARQUET_NAME, "quarantine": QUARANTINE_NAME}
    if config.format == "both":
        files["csv"] = CSV_NAME
    pets = collected.pets
    return {
        "snapshot_date": date.isoformat(),
        "complete": complete,
        "incomplete_reasons": reasons,
        "pets": pets,
        "by_status": counts.by_status,
        "no_status": counts.no_status,
        "unknown_status": counts.unknown_status,
        "rows_fetched": collected.rows_fetched,
        "seen_under_two_statuses": collected.seen_under_two_statuses,
        "conflicting_duplicates": collected.conflicting_duplicates,
        "status_mismatches": collected.status_mismatches,
        "quarantined": quarantined,
        "drop_check": drop.to_json(),
        "statuses": [s.value for s in config.statuses],
        "sweep": config.sweep,
        "pagination_styles": sorted({r.style for r in listings}),
        "pages": sum(r.pages for r in listings),
        "requests": requests,
        "retries": retries,
        "listings": [r.to_json() for r in listings],
        "started_at": started_at.isoformat(),
        "finished_at": finished_at.isoformat(),
        "duration_seconds": round(duration, 3),
        "pets_per_second": round(pets / duration, 1) if duration > 0 else None,
        "base_url": redact(config.client.base_url, [config.client.api_key]),
        "petsync_version": __version__,
        "api_version": API_VERSION,
        "files": files,
        "csv_null": CSV_NULL,
    }
