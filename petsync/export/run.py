"""The export job: page every listing of the catalogue into one dated snapshot.

:func:`run_export` is the orchestration only. It opens the store of ``--out``
(:mod:`petsync.storage.store`: a local directory or an object-store prefix), checks it and
takes its lock before the first API request, then runs the listings
(:mod:`petsync.export.fetch`) into the collector (:mod:`petsync.export.collector`) and
the quarantine (:mod:`petsync.export.quarantine`), judges the result
(:mod:`petsync.export.outcome`), and hands the night to the format the registry chose
(:mod:`petsync.formats.registry`): dated folders staged and published whole
(:mod:`petsync.storage.local_publication`: one rename; on object stores
:mod:`petsync.storage.object_publication`: copies, the data before the manifest), or a commit
to a Delta or Iceberg table. A run that fails anywhere before publication publishes
nothing; with ``strict`` a result that is not to be trusted is not published either.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import logging
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from petsync.client.api import PetLister
from petsync.client.client import PetstoreClient
from petsync.core.errors import PetsyncError
from petsync.core.files import check_writable_dir
from petsync.core.settings_table import EXTRA_FIELDS, OUT, SCRATCH_DIR, STRICT
from petsync.core.stop import StopRequest
from petsync.core.wording import joined
from petsync.export.clock import ClockWatch, check_clock
from petsync.export.collector import PetCollector
from petsync.export.config import ExportConfig
from petsync.export.extra_fields import (
    ExtraFieldsReport,
    choose_column,
    fixed_columns,
    summarise,
)
from petsync.export.fetch import ExportProgress, FetchResult, fetch_listings
from petsync.export.outcome import (
    DropCheck,
    ExportReport,
    RunTiming,
    check_drop,
    outcome_warnings,
)
from petsync.export.quarantine import Quarantine
from petsync.export.tallies import CollectedPets
from petsync.export.winning_rows import Deduplicated
from petsync.formats.night import Committed, Night
from petsync.formats.protocol import SnapshotFormat
from petsync.formats.registry import format_named
from petsync.formats.schema import COLUMNS, ColumnType
from petsync.formats.snapshots import latest_snapshot, list_snapshots
from petsync.storage.layout import PARTITION_KEY, QUARANTINE_NAME, SnapshotInfo
from petsync.storage.lock import Lock
from petsync.storage.store import SnapshotStore, Staged, before_fetch, open_store

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
    location = config.location
    # Before the first API request: the store is reachable, writable, and ours.
    if config.scratch_dir is not None:
        check_writable_dir(config.scratch_dir, "scratch directory (" + SCRATCH_DIR + ")")
    store = open_store(location, now=clock.now, stop=stop)
    lock = store.prepare()
    try:
        with before_fetch(location):
            kind = format_named(config.table_format)
            kind.check(location)  # an existing table of another schema: exit 2 now
            stale = store.clean_staging()
            if stale:
                logger.info("export.staging_cleaned", extra={"fields": {"removed": len(stale)}})
            run_id = uuid.uuid4().hex
            run = _Run(
                config=config,
                kind=kind,
                date=date,
                previous=store.read(
                    lambda where: latest_snapshot(where, before=date), doing="listing snapshots"
                ),
                later=tuple(
                    store.read(
                        lambda where: [s.date for s in list_snapshots(where) if s.date > date],
                        doing="listing snapshots",
                    )
                ),
                store=store,
                lock=lock,
                staged=store.stage(run_id),
                run_id=run_id,
                clock=clock,
                watch=ClockWatch(clock.now, config.clock_tolerance, date),
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
        # mount, a store that failed mid-upload. Nothing was published, so earlier
        # snapshots are as they were.
        scratch = config.scratch_dir
        if scratch is not None and exc.filename and Path(exc.filename).is_relative_to(scratch):
            raise PetsyncError(
                f"cannot write the scratch area under {scratch} ("
                + SCRATCH_DIR
                + f"): {exc.strerror or exc} ({exc.filename}). Nothing was published; earlier "
                "snapshots are untouched. Free space or fix permissions there, or choose "
                "another " + SCRATCH_DIR + "."
            ) from exc
        if not location.is_local:
            from petsync.storage.filesystem import store_error

            raise store_error(
                location, exc, doing="writing the snapshot", before_fetch=False
            ) from exc
        where = exc.filename or config.out_dir
        raise PetsyncError(
            f"cannot write the snapshot under {config.out_dir}: {exc.strerror or exc} "
            f"({where}). Nothing was published; earlier snapshots are untouched. Free space "
            "or fix permissions, or choose another " + OUT + "."
        ) from exc
    finally:
        lock.release()


@dataclass(frozen=True)
class _RunClock:
    """The run's two clocks: wall time for the manifest, monotonic time for durations."""

    now: Callable[[], dt.datetime]
    monotonic: Callable[[], float]


@dataclass(frozen=True)
class _Run:
    """One run's fixed facts, decided under the lock and handed from step to step."""

    config: ExportConfig
    kind: SnapshotFormat  # where the night goes: dated folders, a Delta or an Iceberg table
    date: dt.date
    previous: SnapshotInfo | None  # the latest complete snapshot before tonight: drop check
    later: tuple[dt.date, ...]  # snapshots dated after tonight (a clock that ran ahead)
    store: SnapshotStore
    lock: Lock
    staged: Staged
    run_id: str  # in the manifest and the Parquet footer: readers match the two
    clock: _RunClock
    watch: ClockWatch  # the API's Date headers against our clock, answer by answer
    started_at: dt.datetime
    start: float  # monotonic

    def timing(self) -> RunTiming:
        """The run's timing, ending now."""
        duration = self.clock.monotonic() - self.start
        return RunTiming(self.started_at, self.clock.now(), duration)

    @property
    def fixed_columns(self) -> dict[str, ColumnType]:
        """Extra fields kept as columns by the previous snapshot: their types stay (keep)."""
        if self.config.extra_fields != "keep" or self.previous is None:
            return {}
        return fixed_columns(self.previous.manifest)

    def report(
        self,
        fetched: FetchResult,
        collected: CollectedPets,
        drop: DropCheck,
        extra_fields: ExtraFieldsReport | None = None,
    ) -> ExportReport:
        """The run's report (and manifest), before publishing: no snapshot path yet."""
        return ExportReport(
            config=self.config,
            snapshot_date=self.date,
            snapshot_path=None,
            fetched=fetched,
            collected=collected,
            drop=drop,
            timing=self.timing(),
            run_id=self.run_id,
            extra_fields=extra_fields or ExtraFieldsReport(self.config.extra_fields),
            later_snapshots=self.later,
        )


def _export_into(
    run: _Run,
    client: PetLister | None,
    progress: ExportProgress | None,
    stop: StopRequest | None = None,
) -> ExportReport:
    # Fetched rows and what does not fit the memory budget wait in a scratch directory,
    # beside the staged snapshot (never published) or under scratch_dir; removed at the
    # end whatever happens (and, beside the snapshot, by the next run after a kill).
    config = run.config
    if config.scratch_dir is not None:
        config.scratch_dir.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="petsync-scratch-", dir=config.scratch_dir))
    else:
        scratch = run.staged.scratch(".scratch")
    try:
        collector = PetCollector(
            scratch,
            memory_budget=config.per_pet_memory - config.per_pet_memory // 4,
            listed_statuses=[s.value for s in config.statuses] if config.sweep else (),
        )
        try:
            fetched = _fetch(run, client, collector, progress, scratch / "seen", stop)
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
        shutil.rmtree(scratch, ignore_errors=True)


def _fetch(
    run: _Run,
    client: PetLister | None,
    collector: PetCollector,
    progress: ExportProgress | None,
    scratch: Path,
    stop: StopRequest | None = None,
) -> FetchResult:
    quarantine_path = run.staged.file(QUARANTINE_NAME)
    with (
        _lister(run.config, client, run.watch) as lister,
        Quarantine(quarantine_path, [run.config.client.api_key]) as quarantine,
    ):
        return fetch_listings(
            run.config,
            lister,
            collector,
            quarantine,
            monotonic=run.clock.monotonic,
            progress=progress,
            scratch=scratch,
            stop=stop,
            extra_columns=run.fixed_columns,
            dated=run.watch.dated,  # a caller's client has no observer: each page's Date
        )


@contextlib.contextmanager
def _lister(
    config: ExportConfig, client: PetLister | None, watch: ClockWatch
) -> Iterator[PetLister]:
    """The caller's client as it is (not closed here), or a new one closed afterwards; the
    new one shows ``watch`` every answer, so a wrong clock stops the run at the first."""
    if client is not None:
        yield client
        return
    with PetstoreClient(config.client, on_response=watch.answered) as own:
        yield own


def _publish(run: _Run, collected: Deduplicated, fetched: FetchResult) -> ExportReport:
    """Judge the collected pets, then stage the night in its format and commit it."""
    config = run.config
    clock = check_clock(
        (listing.server_date for listing in fetched.listings),
        run.clock.now(),
        config.clock_tolerance,
    )
    if clock.off:  # the snapshot's date comes from our clock: a wrong date is worse than none
        raise clock.error(run.date)
    extra_fields, columns = _extra_fields(run, collected)
    drop = check_drop(collected.pets, run.previous, config.max_drop)
    if config.strict:
        refusals = outcome_warnings(fetched, drop, strict=True)
        if refusals:
            raise PetsyncError(
                "export refused to publish ("
                + STRICT.given(True)
                + "): "
                + joined(" ", refusals)
                + " The previous snapshot stays the latest."
            )

    night = Night(
        date=run.date,
        location=config.location,
        run_id=run.run_id,
        rows=collected,
        columns=columns,
        trusted=fetched.complete and not drop.flagged,  # the report's exit code 0
        csv=config.writes_csv,
        keep=config.keep,
        store=run.store,
        staged=run.staged,
        lock=run.lock,
    )
    statuses = run.kind.stage(night)
    report = run.report(fetched, collected.counted(statuses), drop, extra_fields)
    return _published(run, report, run.kind.commit(night, report.manifest_text()))


def _extra_fields(
    run: _Run, collected: Deduplicated
) -> tuple[ExtraFieldsReport, dict[str, ColumnType]]:
    """The night's extra fields, and the columns ``keep`` writes; ``fail`` refuses them."""
    config = run.config
    tally = collected.tally_extra_fields()
    fixed = run.fixed_columns
    columns: dict[str, ColumnType] = {}
    if config.extra_fields == "keep":
        # Most readers (DuckDB, Delta, Spark) match column names without regard to case: a
        # field whose name clashes with a column already written gets none.
        taken = {name.lower() for name in (*COLUMNS, PARTITION_KEY)}
        for name in sorted(tally.fields):
            if name.lower() not in taken:
                taken.add(name.lower())
                columns[name] = fixed.get(name) or choose_column(tally.fields[name])
    previous = run.previous
    report = summarise(
        config.extra_fields,
        tally,
        columns,
        today=run.date,
        previous=previous.manifest if previous is not None else None,
        previous_date=previous.date if previous is not None else None,
    )
    if config.extra_fields == "fail" and report.fields:
        shown = ", ".join(
            f"{f.name} ({'/'.join(f.json_types)}, on {f.pets} pets)" for f in report.fields
        )
        raise PetsyncError(
            "export refused to publish ("
            + EXTRA_FIELDS.given("fail")
            + f"): the API sent fields beyond the interface's: {shown}. Nothing was published; "
            "the previous snapshot stays the latest. Update the agreed schema, then re-run with "
            + EXTRA_FIELDS.given("keep")
            + " (or drop)."
        )
    return report, columns


def _published(run: _Run, report: ExportReport, committed: Committed) -> ExportReport:
    """Log what was published (and pruned), return the final report."""
    drop, pruned = report.drop, committed.pruned
    report = dataclasses.replace(
        report, snapshot_path=committed.path, pruned=pruned, table_version=committed.version
    )
    logger.info(
        "export.published",
        extra={
            "fields": {
                "snapshot": str(committed.path),
                "pets": report.pets,
                "complete": report.complete,
                "drop_flagged": drop.flagged,
                "pruned": len(pruned),
            }
        },
    )
    for warning in [*report.warnings, *report.notices]:
        # An outcome: a command prints it itself, so its text log leaves this event out.
        logger.warning("export.warning", extra={"fields": {"message": warning}, "outcome": True})
    return report
