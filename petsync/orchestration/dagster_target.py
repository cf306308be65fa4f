"""What petsync's Dagster definitions share: where a run's key comes from, names, logs.

(No ``from __future__ import annotations``: Dagster reads the resource's annotations.)
"""

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dagster as dg

from petsync.core.errors import PetsyncError
from petsync.ops.settings import resolve_target
from petsync.orchestration.process import job_command


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

    return dict(os.environ)


def asset_name(jobfile: Path, what: str) -> str:
    """A job file's asset or job name: ``nightly-export.toml`` -> ``nightly_export_snapshot``.

    >>> asset_name(Path("jobs/nightly-export.toml"), "snapshot")
    'nightly_export_snapshot'
    """
    return re.sub(r"\W", "_", jobfile.stem) + "_" + what


def job_logger(context: Any) -> Callable[[str], None]:
    """Each line of the child's output to Dagster's log, at the level its JSON event says."""

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
