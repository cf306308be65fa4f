"""petsync's job files as Dagster definitions: snapshot assets, checks, a schedule, a sensor.

A few lines in a user's ``definitions.py``::

    from petsync.orchestration.dagster import petsync_definitions

    defs = petsync_definitions(
        export_jobs=["jobs/nightly-export.toml"],
        import_jobs=["jobs/bulk-import.toml"],
        start_date="2026-11-01",
    )

Each export job becomes a daily-partitioned asset ``<job>_snapshot`` (the partition key is
the snapshot date) with an asset check ``trustworthy`` (fails on exit 4: a listing whose
end was not proven, or a tripped drop check), a history asset ``<job>_history`` built from
the stored snapshots, and a schedule at the cron line's time. Each import job becomes a job
``<job>_import`` launched by a sensor once per new file in its inbox. Every run is a
``petsync run`` child process of the same job file (:mod:`petsync.orchestration.process`):
the job file stays the one configuration, cron and Dagster can take turns, and a run
cancelled in Dagster's UI stops as under SIGTERM, publishing nothing.

The export can only fetch today's catalogue, so only today's partition (UTC) runs the
export. The partitions begin at ``start_date`` or at the first night a snapshot is stored,
whichever is later (no snapshot yet: today), read when the definitions load. A past partition
whose snapshot is stored is reported from its manifest without any API request (the metadata
says so). One with no stored snapshot is not fetchable: its run succeeds without
materializing, skipped, with the reason in its log, an observation and the check's
description, so a backfill goes on past it instead of failing on each night the API can no
longer give; today's catalogue is never written under an old date. A future partition fails.
"""

# No `from __future__ import annotations` here: Dagster reads the annotations of the decorated
# functions (the context and resource parameters) when they are defined.

import datetime as dt
import logging
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from petsync.core.errors import ExitCode, PetsyncError
from petsync.formats.snapshots import list_snapshots
from petsync.ops.jobfile import read_job_kind
from petsync.orchestration.dagster_import import ImportJob
from petsync.orchestration.dagster_target import PetsyncTarget, asset_name, job_logger
from petsync.orchestration.process import run_job

__all__ = ["ExportJob", "ImportJob", "PetsyncTarget", "asset_name", "petsync_definitions"]

# cron.example's nightly line: 02:30 UTC.
DEFAULT_EXPORT_CRON = "30 2 * * *"
DEFAULT_INBOX_INTERVAL_SECONDS = 60
CHECK_NAME = "trustworthy"

Clock = Callable[[], dt.datetime]

logger = logging.getLogger(__name__)


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def petsync_definitions(
    export_jobs: Sequence[str | Path] = (),
    import_jobs: Sequence[str | Path] = (),
    *,
    start_date: str | dt.date,
    workdir: str | Path = ".",
    export_cron: str = DEFAULT_EXPORT_CRON,
    inbox_interval_seconds: int = DEFAULT_INBOX_INTERVAL_SECONDS,
    target: PetsyncTarget | None = None,
    clock: Clock = _utc_now,
) -> dg.Definitions:
    """Dagster definitions for petsync job files: see the module's docstring.

    ``workdir`` is the directory the jobs run in (cron.example's ``cd``): relative paths of
    the job files mean what they mean there. ``start_date`` is the first partition.
    """
    root = Path(workdir).resolve()
    assets: list[Any] = []
    schedules: list[dg.ScheduleDefinition] = []
    sensors: list[dg.SensorDefinition] = []
    jobs: list[Any] = []
    for path in export_jobs:
        export = ExportJob(root, Path(path), start_date, clock)
        assets += [export.snapshot_asset(), export.history_asset()]
        schedules.append(export.schedule(export_cron))
    for path in import_jobs:
        inbox = ImportJob(root, Path(path))
        job = inbox.job()
        jobs.append(job)
        sensors.append(inbox.sensor(job, inbox_interval_seconds))
    return dg.Definitions(
        assets=assets,
        jobs=jobs,
        schedules=schedules,
        sensors=sensors,
        resources={"petsync": target or PetsyncTarget()},
    )


class ExportJob:
    """One export job file: its snapshot asset, history asset and schedule."""

    def __init__(self, root: Path, jobfile: Path, start_date: str | dt.date, clock: Clock):
        kind, table = read_job_kind(root / jobfile)
        if kind != "export":
            raise PetsyncError(f"job file {jobfile}: an export job was expected, it holds [{kind}]")
        self.root, self.jobfile, self.clock = root, jobfile, clock
        env = table.get("env")
        self.env = env if isinstance(env, str) else None
        out = table.get("out")
        if not isinstance(out, str):
            raise PetsyncError(f"job file {jobfile} [export]: out is required for Dagster")
        self.out = out if "://" in out else str(root / out)
        self.partitions = dg.DailyPartitionsDefinition(
            start_date=self.first_night(start_date).isoformat(), timezone="UTC", end_offset=1
        )
        self.snapshot_key = dg.AssetKey(asset_name(jobfile, "snapshot"))

    def first_night(self, start_date: str | dt.date) -> dt.date:
        """The first partition: ``start_date``, or the first night a snapshot is stored if
        that is later (none yet: today, the first night that can be fetched). A store that
        cannot be read now leaves ``start_date``, with a warning."""

        start = dt.date.fromisoformat(str(start_date))
        today = self.clock().astimezone(dt.UTC).date()
        try:
            stored = [info.date for info in list_snapshots(self.out) if info.date <= today]
        except PetsyncError as exc:
            logger.warning(
                "orchestration.snapshots_unreadable",
                extra={"fields": {"out": self.out, "start_date": str(start), "error": str(exc)}},
            )
            return start
        return max(start, stored[0] if stored else today)

    def snapshot_asset(self) -> dg.AssetsDefinition:
        job = self

        @dg.asset(
            key=self.snapshot_key,
            partitions_def=self.partitions,
            check_specs=[dg.AssetCheckSpec(CHECK_NAME, asset=self.snapshot_key)],
            group_name="petsync",
            kinds={"parquet"},
            description=f"The nightly snapshot of `petsync run {self.jobfile}`.",
            output_required=False,  # a past night with no stored snapshot is skipped
        )
        def snapshot(context: dg.AssetExecutionContext, petsync: PetsyncTarget) -> Iterator[Any]:
            yield from job.materialize(context, petsync)

        return snapshot

    def materialize(
        self, context: dg.AssetExecutionContext, petsync: PetsyncTarget
    ) -> Iterator[Any]:
        """The partition's events: today's export, a stored night's report, or the skip."""
        date = dt.date.fromisoformat(context.partition_key)
        today = self.clock().astimezone(dt.UTC).date()
        if date > today:
            raise dg.Failure(
                description=f"partition {date} is in the future (today is {today} UTC): "
                "a snapshot is named after the night it was fetched"
            )
        if date < today:
            yield from self._stored(context, date)
            return
        yield self._fetched(context, petsync, date)

    def _fetched(
        self, context: dg.AssetExecutionContext, petsync: PetsyncTarget, date: dt.date
    ) -> dg.MaterializeResult[None]:
        source = petsync.key_source(self.env, self.root)
        outcome = run_job(petsync.command(self.jobfile), cwd=self.root, on_line=job_logger(context))
        if outcome.exit_code not in (int(ExitCode.OK), int(ExitCode.INCOMPLETE)):
            raise dg.Failure(
                description=f"petsync run {self.jobfile} exited {outcome.exit_code}: "
                + outcome.error_message(),
                metadata={"exit_code": outcome.exit_code},
            )
        summary = outcome.summary or {}
        if summary.get("snapshot_date") != date.isoformat():
            raise dg.Failure(
                description=f"the run published the snapshot of {summary.get('snapshot_date')}, "
                f"not of partition {date} (the date turned during the run); materialize "
                f"partition {summary.get('snapshot_date')} to record it"
            )
        metadata = _snapshot_metadata(summary)
        metadata["api_key_source"] = dg.MetadataValue.text(source)
        metadata["fetched"] = dg.MetadataValue.bool(True)
        return dg.MaterializeResult(
            metadata=metadata, check_results=[_check_result(outcome.exit_code, summary)]
        )

    def _stored(self, context: dg.AssetExecutionContext, date: dt.date) -> Iterator[Any]:

        stored = {info.date: info for info in list_snapshots(self.out)}
        info = stored.get(date)
        if info is None or info.manifest is None:
            yield from self._not_fetchable(context, date)
            return
        context.log.info(f"partition {date}: the stored snapshot, no API request")
        summary = {"snapshot_path": str(info.path), **info.manifest}
        metadata = _snapshot_metadata(summary)
        metadata["fetched"] = dg.MetadataValue.bool(False)
        code = int(ExitCode.OK) if _trusted(summary) else int(ExitCode.INCOMPLETE)
        yield dg.MaterializeResult(metadata=metadata, check_results=[_check_result(code, summary)])

    def _not_fetchable(self, context: dg.AssetExecutionContext, date: dt.date) -> Iterator[Any]:
        """A past night with no stored snapshot: skipped, saying why (never a failure that
        would stop a backfill, never today's catalogue under an old date)."""
        reason = (
            f"partition {date} is not fetchable: no snapshot of {date} is stored under "
            f"{self.out}, and the API lists only today's catalogue, so a past night cannot be "
            "fetched again; skipped (the history asset rebuilds from the snapshots that are "
            "stored)"
        )
        context.log.warning(reason)
        yield dg.AssetObservation(
            asset_key=self.snapshot_key,
            partition=date.isoformat(),
            metadata={"fetchable": False, "reason": reason},
        )
        yield dg.AssetCheckResult(
            check_name=CHECK_NAME,
            passed=False,
            severity=dg.AssetCheckSeverity.WARN,
            description=reason,
            metadata={"fetchable": False},
        )

    def history_asset(self) -> dg.AssetsDefinition:
        out = self.out

        @dg.asset(
            key=dg.AssetKey(asset_name(self.jobfile, "history")),
            deps=[self.snapshot_key],
            partitions_def=self.partitions,
            group_name="petsync",
            description="Each pet's versions with validity dates, from the stored snapshots.",
        )
        def history(context: dg.AssetExecutionContext) -> dg.MaterializeResult:  # type: ignore[type-arg]
            return dg.MaterializeResult(metadata=update_history_metadata(out, context))

        return history

    def schedule(self, cron: str) -> dg.ScheduleDefinition:
        job = dg.define_asset_job(
            asset_name(self.jobfile, "nightly"),
            selection=[self.snapshot_key, dg.AssetKey(asset_name(self.jobfile, "history"))],
        )

        @dg.schedule(
            cron_schedule=cron,
            job=job,
            execution_timezone="UTC",
            name=asset_name(self.jobfile, "schedule"),
        )
        def nightly(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
            # The snapshot is named after the night it runs: today's partition, not yesterday's.
            day = context.scheduled_execution_time.astimezone(dt.UTC).date().isoformat()
            return dg.RunRequest(run_key=day, partition_key=day)

        return nightly


def update_history_metadata(out: str, context: dg.AssetExecutionContext) -> dict[str, Any]:
    """Bring the history table up to date from the stored snapshots; its counts as metadata.

    The seam to :mod:`petsync.history`: the history is rebuilt from stored snapshots only,
    so any partition can run it, today's or a backfill's.
    """
    from petsync.history.update import update_history

    result = update_history(out)
    context.log.info(f"history of {out}: {result}")
    return {key: _metadata_value(value) for key, value in result.to_json().items()}


def _metadata_value(value: Any) -> Any:
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return dg.MetadataValue.json(value)


def _trusted(summary: dict[str, Any]) -> bool:
    drop = summary.get("drop_check") or {}
    return bool(summary.get("complete")) and not drop.get("flagged")


def _check_result(exit_code: int, summary: dict[str, Any]) -> dg.AssetCheckResult:
    drop = summary.get("drop_check") or {}
    return dg.AssetCheckResult(
        check_name=CHECK_NAME,
        passed=exit_code == int(ExitCode.OK) and _trusted(summary),
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "complete": bool(summary.get("complete")),
            "incomplete_reasons": dg.MetadataValue.json(summary.get("incomplete_reasons") or []),
            "drop_flagged": bool(drop.get("flagged")),
            "drop_reason": str(drop.get("reason") or ""),
            "exit_code": exit_code,
        },
    )


def _snapshot_metadata(summary: dict[str, Any]) -> dict[str, Any]:
    path = str(summary.get("snapshot_path") or "")
    return {
        "snapshot_path": dg.MetadataValue.path(path),
        "snapshot_date": str(summary.get("snapshot_date")),
        "pets": int(summary.get("pets") or 0),
        "pets_by_status": dg.MetadataValue.json(
            {**(summary.get("by_status") or {}), "(none)": summary.get("no_status", 0)}
        ),
        "quarantined": int(summary.get("quarantined") or 0),
        "pages": int(summary.get("pages") or 0),
        "requests": int(summary.get("requests") or 0),
        "retries": int(summary.get("retries") or 0),
        "duration_seconds": float(summary.get("duration_seconds") or 0.0),
        "complete": bool(summary.get("complete")),
    }
