"""An import job file under Dagster: a job that imports one file, and the sensor over its inbox.

(No ``from __future__ import annotations``: Dagster reads the decorated functions'
annotations when they are defined.)
"""

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg

from petsync.core.errors import ExitCode, PetsyncError, UsageError
from petsync.core.interface import SPREADSHEET_FILE_LIMIT
from petsync.core.reading import open_regular
from petsync.importer.inbox import expand_inputs
from petsync.ops.jobfile import read_job_kind
from petsync.orchestration.dagster_target import PetsyncTarget, asset_name, job_logger
from petsync.orchestration.process import JobProcess, run_job

# The sensor's cursor remembers this many launched files (by content), newest last.
CURSOR_FILES = 10_000


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
        outcome = run_job(command, cwd=self.root, on_line=job_logger(context))
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
        # Checked as the import checks it: a FIFO swapped in since the glob never blocks
        # the sensor, a device is never read.
        with open_regular(path, "spreadsheet", limit=SPREADSHEET_FILE_LIMIT) as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except (OSError, UsageError):
        return None  # gone, unreadable or no regular file: the next tick looks again
    return digest.hexdigest()
