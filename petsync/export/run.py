"""The export job: page every listing of the catalogue into one dated snapshot.

:func:`run_export` is the orchestration only. Under the output directory's lock
(:mod:`petsync.export.lock`) it runs the listings (:mod:`petsync.export.listings`) into the
collector (:mod:`petsync.export.collector`) and the quarantine
(:mod:`petsync.export.quarantine`), judges the result (:mod:`petsync.export.report`), writes
the snapshot files into a staged directory and publishes it in one rename
(:mod:`petsync.export.publish`). A run that fails anywhere before that rename publishes
nothing; with ``strict`` a result that is not to be trusted is not published either.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from petsync.client.api import PetLister
from petsync.client.client import PetstoreClient
from petsync.core.errors import ExitCode, PetsyncError
from petsync.core.stop import StopRequest
from petsync.export.collector import Deduplicated, PetCollector
from petsync.export.config import ExportConfig
from petsync.export.listings import ExportProgress, FetchResult, fetch_listings
from petsync.export.lock import DirectoryLock
from petsync.export.publish import StagedSnapshot, clean_staging, prune_snapshots
from petsync.export.quarantine import Quarantine
from petsync.export.report import ExportReport, RunTiming, check_drop, outcome_warnings
from petsync.export.snapshot import (
    CSV_NAME,
    MANIFEST_NAME,
    PARQUET_NAME,
    QUARANTINE_NAME,
    SnapshotInfo,
    latest_snapshot,
)

logger = logging.getLogger(__name__)


def run_export(
    config: ExportConfig,
    *,
    client: PetLister | None = None,
    today: dt.date | None = None,
    now: Callable[[], dt.datetime] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    progress: ExportProgress | None = None,
    stop: StopRequest | None = None,
) -> ExportReport:
    """Export the catalogue into a new snapshot under ``config.out_dir``; return the report.

    ``today`` names the snapshot (default: the UTC date of ``now()``); ``client`` lets a
    caller share or instrument the client (it is not closed here): anything with
    ``list_pets`` and request counts (:class:`~petsync.client.api.PetLister`). Raises
    :class:`~petsync.core.errors.LockedError` when another run holds the directory, any client
    error when a listing fails outright (nothing is published then), and
    :class:`~petsync.core.errors.PetsyncError` (exit 1) when ``strict`` refuses to publish.
    ``stop`` (a signal) is polled between pages: a stopped run publishes nothing and raises
    :class:`~petsync.core.errors.StoppedError` once its staging is cleaned.

    >>> report = run_export(ExportConfig(client=cfg, out_dir=Path("out")))  # doctest: +SKIP
    >>> report.complete, report.pets, report.snapshot_path                  # doctest: +SKIP
    (True, 10000, PosixPath('out/pets/snapshot_date=2026-11-22'))
    """
    clock = _RunClock(now or (lambda: dt.datetime.now(dt.UTC)), monotonic)
    started_at = clock.now()
    date = today or started_at.astimezone(dt.UTC).date()
    try:
        with DirectoryLock(config.out_dir):
            stale = clean_staging(config.out_dir)
            if stale:
                logger.info("export.staging_cleaned", extra={"fields": {"removed": len(stale)}})
            run = _Run(
                config=config,
                date=date,
                previous=latest_snapshot(config.out_dir),
                staged=StagedSnapshot.create(config.out_dir),
                clock=clock,
                started_at=started_at,
                start=clock.monotonic(),  # the duration counts from here, the lock taken
            )
            try:
                return _export_into(run, client, progress, stop)
            except BaseException:
                run.staged.discard()
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


@dataclass(frozen=True)
class _RunClock:
    """The run's two clocks: wall time for the manifest, monotonic time for durations."""

    now: Callable[[], dt.datetime]
    monotonic: Callable[[], float]


@dataclass(frozen=True)
class _Run:
    """One run's fixed facts, decided under the lock and handed from step to step."""

    config: ExportConfig
    date: dt.date
    previous: SnapshotInfo | None  # the latest complete snapshot, for the drop check
    staged: StagedSnapshot
    clock: _RunClock
    started_at: dt.datetime
    start: float  # monotonic

    def timing(self) -> RunTiming:
        """The run's timing, ending now."""
        duration = self.clock.monotonic() - self.start
        return RunTiming(self.started_at, self.clock.now(), duration)


def _export_into(
    run: _Run,
    client: PetLister | None,
    progress: ExportProgress | None,
    stop: StopRequest | None = None,
) -> ExportReport:
    # Fetched rows wait in a scratch file beside the staged snapshot (never published).
    spill = run.staged.scratch(".rows.arrow")
    try:
        collector = PetCollector(spill)
        try:
            fetched = _fetch(run, client, collector, progress, stop)
            if stop is not None and stop.requested:
                raise stop.error(
                    f"the export was stopped by {stop.description} before publishing; nothing "
                    "was published, the previous snapshot stays the latest"
                )
        except BaseException:
            collector.close()
            raise
        return _publish(run, collector.finish(), fetched)
    finally:
        spill.unlink(missing_ok=True)


def _fetch(
    run: _Run,
    client: PetLister | None,
    collector: PetCollector,
    progress: ExportProgress | None,
    stop: StopRequest | None = None,
) -> FetchResult:
    quarantine_path = run.staged.file(QUARANTINE_NAME)
    with (
        _lister(run.config, client) as lister,
        Quarantine(quarantine_path, [run.config.client.api_key]) as quarantine,
    ):
        return fetch_listings(
            run.config,
            lister,
            collector,
            quarantine,
            monotonic=run.clock.monotonic,
            progress=progress,
            stop=stop,
        )


@contextlib.contextmanager
def _lister(config: ExportConfig, client: PetLister | None) -> Iterator[PetLister]:
    """The caller's client as it is (not closed here), or a new one closed afterwards."""
    if client is not None:
        yield client
        return
    with PetstoreClient(config.client) as own:
        yield own


def _publish(run: _Run, collected: Deduplicated, fetched: FetchResult) -> ExportReport:
    """Judge the collected pets, write the snapshot files and publish them."""
    config = run.config
    drop = check_drop(collected.pets, run.previous, config.max_drop)
    if config.strict:
        refusals = outcome_warnings(fetched.incomplete_reasons, drop, strict=True)
        if refusals:
            raise PetsyncError(
                "export refused to publish (--strict): "
                + " ".join(refusals)
                + " The previous snapshot stays the latest."
            )

    written = collected.write(
        run.staged.file(PARQUET_NAME), run.staged.file(CSV_NAME) if config.writes_csv else None
    )
    report = ExportReport(
        config=config,
        snapshot_date=run.date,
        snapshot_path=None,
        fetched=fetched,
        collected=written,
        drop=drop,
        timing=run.timing(),
    )
    run.staged.write_text(MANIFEST_NAME, report.manifest_text())
    path = run.staged.publish(run.date)
    pruned: list[Path] = []
    if config.keep is not None and report.exit_code is ExitCode.OK:  # only after a trusted run
        pruned = prune_snapshots(config.out_dir, config.keep)
    report = dataclasses.replace(report, snapshot_path=path, pruned=pruned)
    logger.info(
        "export.published",
        extra={
            "fields": {
                "snapshot": str(path),
                "pets": report.pets,
                "complete": report.complete,
                "drop_flagged": drop.flagged,
                "pruned": len(pruned),
            }
        },
    )
    for warning in report.warnings:
        logger.warning("export.warning", extra={"fields": {"message": warning}})
    return report
