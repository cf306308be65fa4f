"""What one ``petsync`` invocation carries from the group to its command, typed.

The group puts a :class:`CliState` on the click context (``ctx.obj``); commands receive it
with :data:`pass_state`. It holds the log handle (so a resolved key is redacted from the log
output too), whether stderr carries JSON lines, the process environment, and the job that
``petsync run`` is running, if any. :class:`TargetOptions` is the value of the shared
target options (``--base-url``, ``--env``, ...) as a command was given them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

from petsync.core.apikey import redact
from petsync.core.errors import IncompleteError, PetsyncError

if TYPE_CHECKING:
    from petsync.client.client import PetstoreClient
    from petsync.ops.logs import LogHandle
    from petsync.ops.settings import Target


@dataclass(frozen=True)
class TargetOptions:
    """The target options of one command: what to resolve the base URL and key from.

    ``env_source`` says where ``env`` came from (``--env``, or a job file) for
    ``petsync config show`` and ``petsync run --check``.
    """

    base_url: str | None = None
    api_key_file: Path | None = None
    env: str | None = None
    config: Path | None = None
    allow_insecure_http: bool = False
    env_source: str = "--env"

    def overridden_by(self, given: TargetOptions) -> TargetOptions:
        """These options with every value ``given`` sets winning (``run``'s own over a job's)."""
        env_from = given if given.env else self
        return TargetOptions(
            base_url=given.base_url or self.base_url,
            api_key_file=given.api_key_file or self.api_key_file,
            env=env_from.env,
            config=given.config or self.config,
            allow_insecure_http=given.allow_insecure_http or self.allow_insecure_http,
            env_source=env_from.env_source,
        )


@dataclass(frozen=True)
class RunningJob:
    """The job ``petsync run`` is running: its name labels the metrics, its target wins."""

    name: str
    target: TargetOptions


@dataclass
class CliState:
    """The invocation's log handle, output mode and environment, and the running job."""

    log: LogHandle | None = None
    json_logs: bool = False
    environ: Mapping[str, str] = field(default_factory=dict)
    job: RunningJob | None = None

    def job_name(self, command: str) -> str:
        """The metrics label: the job file's name under ``petsync run``, else the command's."""
        return self.job.name if self.job is not None else command

    def resolve_target(self, options: TargetOptions, *, require_key: bool = True) -> Target:
        """Resolve the base URL and key the options name; the key joins the log's redaction."""
        from petsync.ops.settings import resolve_target

        target = resolve_target(
            base_url=options.base_url,
            api_key_file=options.api_key_file,
            environ=self.environ,
            require_key=require_key,
            env_name=options.env,
            env_source=options.env_source,
            config_path=options.config,
            allow_insecure_http=options.allow_insecure_http,
        )
        if self.log is not None:
            self.log.add_key(target.api_key)
        return target

    def client(self, options: TargetOptions) -> PetstoreClient:
        """A :class:`PetstoreClient` for the target the options name."""
        from petsync.client.client import PetstoreClient

        return PetstoreClient(self.resolve_target(options).client_config())

    def echo_error(self, exc: PetsyncError) -> None:
        """Show an error the way this invocation's stderr wants it.

        ``Error: message`` as text; with JSON logs an ``error`` event, so stderr stays JSON.
        An :class:`IncompleteError` is a finished job's outcome, not a failure: its warnings
        show as ``Warning:`` lines (with JSON logs the job has logged them as events).
        """
        if isinstance(exc, IncompleteError):
            for warning in [] if self.json_logs else exc.warnings:
                click.echo(f"Warning: {redact(warning)}", err=True)
            return
        message = redact(str(exc))
        if self.json_logs:
            fields = {"message": message, "error": type(exc).__name__}
            logging.getLogger("petsync.cli").error(
                "error", extra={"fields": {**fields, "exit_code": int(exc.exit_code)}}
            )
        else:
            click.echo(f"Error: {message}", err=True)


pass_state = click.make_pass_decorator(CliState)
