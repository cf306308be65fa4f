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
export. A past partition whose snapshot is stored is reported from its manifest without any
API request (the metadata says so); one with no stored snapshot fails, naming the date,
instead of writing today's catalogue under an old date. A future partition fails too.
"""

# No `from __future__ import annotations` here: Dagster reads the annotations of the decorated
# functions (the context and resource parameters) when they are defined.

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import dagster as dg

from petsync.core.errors import ExitCode, PetsyncError
from petsync.ops.jobfile import read_job_kind
from petsync.ops.settings import resolve_target
from petsync.orchestration.process import JobProcess, job_command, run_job

# cron.example's nightly line: 02:30 UTC.
DEFAULT_EXPORT_CRON = "30 2 * * *"
DEFAULT_INBOX_INTERVAL_SECONDS = 60
CHECK_NAME = "trustworthy"
# The sensor's cursor remembers this many launched files (by content), newest last.
CURSOR_FILES = 10_000

Clock = Callable[[], dt.datetime]


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class PetsyncTarget(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Where a run's API key comes from: petsync's own rules, checked before the child starts.

    Left empty it changes nothing: the child reads the key the way cron's run would
    (``PETSYNC_<ENV>_API_KEY``, ``PETSYNC_API_KEY``, an ``api_key_file`` in petsync.toml).
    ``api_key_file`` names a mode-600 file that wins over those, as ``--api-key-file`` does.
    The key itself never passes through Dagster's config, logs or metadata; only where it
    came from does.
    """

    api_key_file: str | None = None
    config_file: str | None = None

    def key_source(self, job_env: str | None, workdir: Path) -> str:
        """Where the job's key would come from (``PETSYNC_PRODUCTION_API_KEY``, ...).

        Raises :class:`dagster.Failure` with petsync's message when there is none.
        """
        try:
            target = resolve_target(
                base_url=None,
                api_key_file=Path(self.api_key_file) if self.api_key_file else None,
                environ=_environ(),
                env_name=job_env,
                env_source="job file",
                config_path=Path(self.config_file) if self.config_file else None,
                cwd=workdir,
            )
        except PetsyncError as exc:
            raise dg.Failure(description=str(exc)) from exc
        return target.api_key_source or "none"

    def command(self, jobfile: Path, overrides: dict[str, str] | None = None) -> list[str]:
        key_file = Path(self.api_key_file) if self.api_key_file else None
        command = job_command(jobfile, overrides, api_key_file=key_file)
        if self.config_file:
            command[-1:-1] = ["--config", self.config_file]
        return command


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


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


def asset_name(jobfile: Path, what: str) -> str:
    """A job file's asset or job name: ``nightly-export.toml`` -> ``nightly_export_snapshot``.

    >>> asset_name(Path("jobs/nightly-export.toml"), "snapshot")
    'nightly_export_snapshot'
    """
    return re.sub(r"\W", "_", jobfile.stem) + "_" + what


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
            start_date=str(start_date), timezone="UTC", end_offset=1
        )
        self.snapshot_key = dg.AssetKey(asset_name(jobfile, "snapshot"))

    def snapshot_asset(self) -> dg.AssetsDefinition:
        job = self

        @dg.asset(
            key=self.snapshot_key,
            partitions_def=self.partitions,
            check_specs=[dg.AssetCheckSpec(CHECK_NAME, asset=self.snapshot_key)],
            group_name="petsync",
            kinds={"parquet"},
            description=f"The nightly snapshot of `petsync run {self.jobfile}`.",
        )
        def snapshot(
            context: dg.AssetExecutionContext, petsync: PetsyncTarget
        ) -> dg.MaterializeResult:  # type: ignore[type-arg]
            return job.materialize(context, petsync)

        return snapshot

    def materialize(
        self, context: dg.AssetExecutionContext, petsync: PetsyncTarget
    ) -> dg.MaterializeResult[None]:
        date = dt.date.fromisoformat(context.partition_key)
        today = self.clock().astimezone(dt.UTC).date()
        if date > today:
            raise dg.Failure(
                description=f"partition {date} is in the future (today is {today} UTC): "
                "a snapshot is named after the night it was fetched"
            )
        if date < today:
            return self._stored(context, date)
        source = petsync.key_source(self.env, self.root)
        outcome = run_job(petsync.command(self.jobfile), cwd=self.root, on_line=_logger(context))
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

    def _stored(
        self, context: dg.AssetExecutionContext, date: dt.date
    ) -> dg.MaterializeResult[None]:
        from petsync.export.snapshot import list_snapshots

        stored = {info.date: info for info in list_snapshots(self.out)}
        info = stored.get(date)
        if info is None or info.manifest is None:
            raise dg.Failure(
                description=f"no snapshot of {date} is stored under {self.out}, and the API "
                "lists only today's catalogue: a past night cannot be fetched again (the "
                "history asset rebuilds from the snapshots that are stored)"
            )
        context.log.info(f"partition {date}: the stored snapshot, no API request")
        summary = {"snapshot_path": str(info.path), **info.manifest}
        metadata = _snapshot_metadata(summary)
        metadata["fetched"] = dg.MetadataValue.bool(False)
        code = int(ExitCode.OK) if _trusted(summary) else int(ExitCode.INCOMPLETE)
        return dg.MaterializeResult(metadata=metadata, check_results=[_check_result(code, summary)])

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


def _logger(context: Any) -> Callable[[str], None]:
    def log(line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            context.log.info(line)
            return
        level = event.get("level") if isinstance(event, dict) else None
        {"error": context.log.error, "warning": context.log.warning}.get(
            str(level), context.log.info
        )(line)

    return log


class ImportJob:
    """One import job file: a job that imports one file, and the sensor over its inbox."""

    def __init__(self, root: Path, jobfile: Path):
        kind, table = read_job_kind(root / jobfile)
        if kind != "import":
            raise PetsyncError(f"job file {jobfile}: an import job was expected, it holds [{kind}]")
        files = table.get("file")
        patterns = [files] if isinstance(files, str) else files if isinstance(files, list) else []
        if not patterns or not all(isinstance(p, str) for p in patterns):
            raise PetsyncError(f"job file {jobfile} [import]: file (the inbox glob) is required")
        self.root, self.jobfile, self.patterns = root, jobfile, [str(p) for p in patterns]
        env = table.get("env")
        self.env = env if isinstance(env, str) else None

    def job(self) -> dg.JobDefinition:
        importer = self

        @dg.op(
            name=asset_name(self.jobfile, "import_file"),
            config_schema={"file": str},
            out=dg.Out(dg.Nothing),
        )
        def import_file(context: dg.OpExecutionContext, petsync: PetsyncTarget) -> None:
            importer.run_file(context, petsync, context.op_config["file"])

        @dg.job(name=asset_name(self.jobfile, "import"))
        def import_job() -> None:
            import_file()

        return import_job

    def run_file(self, context: Any, petsync: PetsyncTarget, file: str) -> JobProcess:
        petsync.key_source(self.env, self.root)
        command = petsync.command(self.jobfile, {"file": json.dumps(file)})
        outcome = run_job(command, cwd=self.root, on_line=_logger(context))
        summary = outcome.summary or {}
        # One file's report is the summary itself; several come under "imports".
        reports = summary.get("imports", [summary] if "source" in summary else [])

        def count(*names: str) -> int:
            return sum(int(report.get(name) or 0) for report in reports for name in names)

        context.add_output_metadata(
            {
                "file": file,
                "rows_read": count("rows_read"),
                "created": count("created"),
                "already_created": count("already_created"),
                "rejected": count("rejected_local", "rejected_api"),
                "uncertain": count("uncertain"),
                "pending": count("pending"),
                "output_files": dg.MetadataValue.json([r.get("files") for r in reports]),
                "exit_code": outcome.exit_code,
            }
        )
        if outcome.exit_code not in (int(ExitCode.OK), int(ExitCode.INCOMPLETE)):
            raise dg.Failure(
                description=f"petsync run {self.jobfile} --set file={file} exited "
                f"{outcome.exit_code}: " + outcome.error_message(),
                metadata={"exit_code": outcome.exit_code},
            )
        return outcome

    def inbox(self) -> list[Path]:
        """The files the job's globs match now, relative to the working directory."""
        from petsync.importer.inbox import expand_inputs

        return [
            path.relative_to(self.root) if path.is_absolute() else path
            for path in expand_inputs([str(self.root / pattern) for pattern in self.patterns])
        ]

    def sensor(self, job: dg.JobDefinition, interval: int) -> dg.SensorDefinition:
        importer = self

        @dg.sensor(
            name=asset_name(self.jobfile, "inbox"),
            job=job,
            minimum_interval_seconds=interval,
        )
        def inbox(context: dg.SensorEvaluationContext) -> Iterator[dg.RunRequest]:
            yield from importer.new_files(context)

        return inbox

    def new_files(self, context: dg.SensorEvaluationContext) -> Iterator[dg.RunRequest]:
        """One run per file whose content was never launched (the journal's own key)."""
        launched: list[str] = json.loads(context.cursor) if context.cursor else []
        seen = set(launched)
        op = asset_name(self.jobfile, "import_file")
        for path in self.inbox():
            digest = _sha256(self.root / path)
            if digest is None or digest in seen:
                continue
            seen.add(digest)
            launched.append(digest)
            yield dg.RunRequest(
                run_key=digest,
                run_config={"ops": {op: {"config": {"file": str(path)}}}},
                tags={"petsync/file": str(path)},
            )
        context.update_cursor(json.dumps(launched[-CURSOR_FILES:]))


def _sha256(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None  # gone or unreadable since the glob: the next tick sees it again
    return digest.hexdigest()
