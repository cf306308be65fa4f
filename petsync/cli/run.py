"""``petsync run``: a job file runs the command it names, as that command's own options would.

A job file's keys are the command's long options in snake_case. What each key takes is read
here from the command's click parameters (:func:`job_parameters`, :func:`option_spec`) and
each value is converted by the parameter's own type, so a new option is a new job key with
no second list to update. This is click knowledge, so it lives in the command line; reading
and checking the TOML against those specs is :mod:`petsync.ops.jobfile`, which has no click.
"""

from __future__ import annotations

import enum
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from petsync.cli.history import history_lines
from petsync.cli.options import TARGET_PARAMS, target_options
from petsync.cli.render_settings import target_lines
from petsync.cli.state import CliState, RunningJob, TargetOptions, pass_state
from petsync.core.errors import (
    ConfigError,
    IncompleteError,
    PetsyncError,
    StoppedError,
    severity,
)
from petsync.core.wording import job_file_terms
from petsync.ops.jobfile import (
    AFTER_KEYS,
    JOB_KINDS,
    JobFile,
    JobKind,
    OptionKind,
    OptionSpec,
    load_job,
    parse_override,
)

logger = logging.getLogger(__name__)


@click.command()
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Check the job file and the settings it would run with; contact nothing, run nothing.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="Import jobs: check every row and write the reject file, send nothing.",
)
@click.option(
    "--json/--text",
    "as_json",
    default=None,
    help="The summary as one JSON line, or as text, whatever the job file's json says. "
    "Default: the job file's json, else text.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Replace or add one key of the job file for this run (VALUE as in TOML: keep=7, "
    "sweep=false, file=inbox/new.csv). Repeatable.",
)
@target_options
@click.argument(
    "jobfiles", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path)
)
@pass_state
@click.pass_context
def run(
    ctx: click.Context,
    state: CliState,
    check_only: bool,
    dry_run: bool,
    as_json: bool | None,
    overrides: tuple[str, ...],
    jobfiles: tuple[Path, ...],
    target: TargetOptions,
) -> None:
    """Run saved jobs: TOML files each holding one [export] or [import] table.

    The table's keys are the command's long options in snake_case, plus `env`; options
    given here (--env, --base-url, ...) win over the file's. The metrics job label is the
    file's name without .toml. Several job files run one after another (a signal stops
    the rest); the exit code is the worst.

    \b
    Example:
        petsync run jobs/nightly-export.toml
        petsync run --check jobs/bulk-import.toml
        petsync run --dry-run jobs/bulk-import.toml
        petsync run --json jobs/nightly-export.toml   # as cron.example runs it
        petsync run jobs/bulk-import.toml --set file=inbox/late.xlsx
    """
    changes = dict(parse_override(text) for text in overrides)
    given = _Given(check_only, dry_run, as_json, target, changes)
    if len(jobfiles) == 1:
        _run_one(ctx, state, given, jobfiles[0])
        return
    errors: list[PetsyncError] = []
    for jobfile in jobfiles:
        try:
            _run_one(ctx, state, given, jobfile)
        except PetsyncError as exc:
            errors.append(exc)
            if isinstance(exc, StoppedError):
                break  # a signal stops the jobs not yet started too
    if errors:
        # Each job's error is shown; the worst last, by the one boundary, with its exit code.
        worst = max(errors, key=lambda e: severity(int(e.exit_code)))
        for error in errors:
            if error is not worst:
                state.echo_error(error)
        raise worst


@dataclass(frozen=True)
class _Given:
    """What ``run``'s own options say, for every job it runs."""

    check_only: bool
    dry_run: bool
    as_json: bool | None  # --json / --text; None: the job file's json key decides
    target: TargetOptions
    overrides: dict[str, object]  # --set KEY=VALUE


def _run_one(ctx: click.Context, state: CliState, given: _Given, jobfile: Path) -> None:
    """Run one job file; what it says of a setting (an error, a warning, a log line) names
    the job file's key, not an option nobody gave."""
    terms = job_file_terms(jobfile)
    try:
        with state.terms_of_job(terms):
            _run_job(ctx, state, given, jobfile)
    except PetsyncError as exc:
        exc.shown_to(terms)  # shown by the one boundary, in the job file's terms
        raise


def _run_job(ctx: click.Context, state: CliState, given: _Given, jobfile: Path) -> None:
    specs = {kind: job_specs(ctx, kind) for kind in JOB_KINDS}
    job = load_job(jobfile, specs, given.overrides)
    command = _job_command(ctx, job.kind)
    arguments, job_target = job_arguments(ctx, job, command)
    running = RunningJob(
        name=job.name,
        target=job_target.overridden_by(given.target),
        terms=job_file_terms(jobfile),
    )
    if given.check_only:
        # Resolved before anything is printed: a job whose settings fail is never "valid".
        lines = target_lines(state.resolve_target(running.target))
        click.echo(f"{jobfile}: {job.kind} job {job.name!r} is valid")
        for line in lines:
            click.echo(f"  {line}")
        for key, value in job.options.items():
            click.echo(f"  {key} = {json.dumps(value)}")
        return
    if given.as_json is not None:
        arguments["as_json"] = given.as_json
    dry_run = given.dry_run
    if dry_run:
        if job.kind != "import":
            raise ConfigError(
                f"{jobfile}: --dry-run applies to import jobs; check an export job with --check"
            )
        arguments["dry_run"] = True
    state.job = running
    try:
        try:
            ctx.invoke(command, **arguments)
        except IncompleteError:  # published, flagged: the history takes it, closing nothing
            _after(job, arguments)
            raise
        _after(job, arguments)
    finally:
        state.job = None


def _after(job: JobFile, arguments: dict[str, Any]) -> None:
    """The job's steps after its command: ``update_history`` for an export job."""
    if job.options.get("update_history") is True:
        from petsync.history.update import update_history

        report = update_history(arguments["out_dir"])
        if arguments.get("as_json"):  # stdout holds the export's one JSON document
            logger.info("history_updated", extra={"fields": report.to_json()})
            return
        for line in history_lines(report):
            click.echo(line)


def job_parameters(command: click.Command) -> dict[str, click.Parameter]:
    """A command's parameters by job-file key: the long option name in snake_case.

    ``--out`` (stored as ``out_dir``) is ``out``; an argument keeps its name (``file``).
    """
    found: dict[str, click.Parameter] = {}
    for param in command.params:
        if param.name is None:
            continue
        longs = [opt for opt in param.opts if opt.startswith("--")]
        key = longs[0][2:].replace("-", "_") if isinstance(param, click.Option) and longs else None
        found[key or param.name] = param
    return found


def option_spec(key: str, param: click.Parameter) -> OptionSpec:
    """What the job key of ``param`` takes, from the parameter's click type."""
    ptype = param.type
    option = param if isinstance(param, click.Option) else None
    choices: tuple[str, ...] = ()
    kind: OptionKind
    if isinstance(ptype, click.Choice):
        kind = "choice"
        choices = tuple(c.value if isinstance(c, enum.Enum) else str(c) for c in ptype.choices)
    elif isinstance(ptype, click.Path):
        kind = "path"
    elif isinstance(ptype, click.types.BoolParamType) or (option is not None and option.is_flag):
        kind = "boolean"
    elif isinstance(ptype, click.types.IntParamType):
        kind = "integer"
    elif isinstance(ptype, click.types.FloatParamType):
        kind = "float"
    else:
        kind = "string"
    multiple = (option is not None and option.multiple) or param.nargs == -1
    help_text = option.help or "" if option is not None else ""
    return OptionSpec(key, kind, multiple, param.required, choices, help_text)


def job_specs(ctx: click.Context, kind: JobKind) -> list[OptionSpec]:
    """The keys a job of ``kind`` may hold: its command's options."""
    params = job_parameters(_job_command(ctx, kind))
    return [option_spec(key, param) for key, param in params.items()] + list(AFTER_KEYS[kind])


def job_arguments(
    ctx: click.Context, job: JobFile, command: click.Command
) -> tuple[dict[str, Any], TargetOptions]:
    """A checked job file as the command's arguments, converted as its own options would be.

    The target options come apart, as the job's :class:`TargetOptions` (``run``'s own
    options override them); the rest are the arguments to invoke the command with.
    """
    params = job_parameters(command)
    arguments: dict[str, Any] = {}
    for key, value in job.options.items():
        if key not in params:  # a step after the command (AFTER_KEYS), not an option
            continue
        param = params[key]
        try:
            converted = param.process_value(ctx, tuple(value) if isinstance(value, list) else value)
        except click.BadParameter as exc:
            raise ConfigError(f"job file {job.path} [{job.kind}]: {key}: {exc.message}") from exc
        if param.name:
            arguments[param.name] = converted
    given = {name: arguments.pop(name) for name in TARGET_PARAMS if name in arguments}
    return arguments, TargetOptions.given_by(f"job file {job.path}", **given)


def _job_command(ctx: click.Context, kind: JobKind) -> click.Command:
    group = ctx.find_root().command
    command = group.get_command(ctx, kind) if isinstance(group, click.Group) else None
    if command is None:
        raise ConfigError(f"this petsync has no {kind} command to run the job with")
    return command
