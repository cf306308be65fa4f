"""What one ``petsync`` invocation carries from the group to its command, typed.

The group puts a :class:`CliState` on the click context (``ctx.obj``); commands receive it
with :data:`pass_state`. It holds the log handle (so a resolved key is redacted from the log
output too), whether stderr carries JSON lines, the process environment, and the job that
``petsync run`` is running, if any. :class:`TargetOptions` is the value of the shared
target options (``--base-url``, ``--env``, ...) as a command was given them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from petsync._version import __version__
from petsync.core.apikey import redact
from petsync.core.errors import ExitCode, IncompleteError, PetsyncError
from petsync.core.text import shown_text
from petsync.core.wording import COMMAND_LINE, Terms, render
from petsync.ops.limits import LIMIT_KEYS
from petsync.ops.settings import inspect_target

BUG_MESSAGE_LIMIT = 300  # characters of the exception's own message shown
TERMINAL_LINE_LIMIT = 2_000  # characters of one error or warning line

if TYPE_CHECKING:
    from petsync.client.client import PetstoreClient
    from petsync.ops.logs import LogHandle
    from petsync.ops.settings import Target, TargetView


@dataclass(frozen=True)
class TargetOptions:
    """The target options of one command: what to resolve the base URL, key and limits from.

    A value left None (False for the flag) was not given. ``sources`` says where each given
    value came from (its option, or ``job file jobs/x.toml``), for ``petsync config show``
    and ``petsync run --check``; a value without an entry came from its own option.
    """

    base_url: str | None = None
    api_key_file: Path | None = None
    env: str | None = None
    config: Path | None = None
    allow_insecure_http: bool = False
    timeout: float | None = None
    retries: int | None = None
    retry_budget: float | None = None
    max_response_size: int | None = None
    sources: tuple[tuple[str, str], ...] = ()

    @classmethod
    def given_by(cls, origin: str, **values: Any) -> TargetOptions:
        """Options whose given values all came from ``origin`` (``job file jobs/x.toml``)."""
        given = tuple((name, origin) for name, value in values.items() if _given(value))
        return cls(**values, sources=given)

    def source(self, name: str) -> str:
        """Where the value of field ``name`` came from: its option unless ``sources`` says."""
        return dict(self.sources).get(name, "--" + name.replace("_", "-"))

    @property
    def env_source(self) -> str:
        return self.source("env")

    def given_limits(self) -> dict[str, tuple[float | int, str]]:
        """The client limits given, each with its source, by job-file key."""

        return {
            key: (value, self.source(key))
            for key in LIMIT_KEYS
            if (value := getattr(self, key)) is not None
        }

    def overridden_by(self, given: TargetOptions) -> TargetOptions:
        """These options with every value ``given`` sets winning (``run``'s own over a job's)."""
        values: dict[str, Any] = {}
        sources: list[tuple[str, str]] = []
        for item in dataclasses.fields(self):
            if item.name == "sources":
                continue
            winner = given if _given(getattr(given, item.name)) else self
            values[item.name] = getattr(winner, item.name)
            if _given(values[item.name]):
                sources.append((item.name, winner.source(item.name)))
        return TargetOptions(**values, sources=tuple(sources))


def _given(value: object) -> bool:
    return value is not None and value is not False


@dataclass(frozen=True)
class RunningJob:
    """The job ``petsync run`` is running: its name labels the metrics, its target wins,
    and what it says of a setting names the job file's key (``terms``)."""

    name: str
    target: TargetOptions
    terms: Terms = COMMAND_LINE


@dataclass
class CliState:
    """The invocation's log handle, output mode and environment, and the running job."""

    log: LogHandle | None = None
    json_logs: bool = False
    environ: Mapping[str, str] = field(default_factory=dict)
    job: RunningJob | None = None
    debug: bool = False  # --log-level debug: an internal error shows its traceback

    @property
    def terms(self) -> Terms:
        """Whose terms a setting is named in: a running job file's, else the command line's."""
        return self.job.terms if self.job is not None else COMMAND_LINE

    def job_name(self, command: str) -> str:
        """The metrics label: the job file's name under ``petsync run``, else the command's."""
        return self.job.name if self.job is not None else command

    def resolve_target(self, options: TargetOptions, *, require_key: bool = True) -> Target:
        """Resolve the base URL and key the options name; the key joins the log's redaction."""
        return self.inspect_target(options).target(require_key=require_key)

    def inspect_target(self, options: TargetOptions) -> TargetView:
        """Every setting as far as it resolves (``config show``); a key found joins the
        log's redaction."""

        view = inspect_target(
            base_url=options.base_url,
            api_key_file=options.api_key_file,
            environ=self.environ,
            env_name=options.env,
            env_source=options.env_source,
            config_path=options.config,
            allow_insecure_http=options.allow_insecure_http,
            allow_insecure_http_source=options.source("allow_insecure_http"),
            limits=options.given_limits(),
            terms=COMMAND_LINE,
        )
        if self.log is not None:
            self.log.add_key(view.api_key)
        return view

    def client(self, options: TargetOptions) -> PetstoreClient:
        """A :class:`PetstoreClient` for the target the options name."""
        from petsync.client.client import PetstoreClient

        return PetstoreClient(self.resolve_target(options).client_config())

    @contextlib.contextmanager
    def terms_of_job(self, terms: Terms) -> Iterator[None]:
        """While a job file's command runs, its log lines name the file's keys."""
        if self.log is None:
            yield
            return
        with self.log.terms_of(terms):
            yield

    def redact(self, text: str) -> str:
        """``text`` without any key this invocation knows (or any bearer token)."""
        return self.log.redact(text) if self.log is not None else redact(text)

    def echo_error(self, exc: PetsyncError) -> None:
        """Show an error the way this invocation's stderr wants it.

        ``Error: message`` as text; with JSON logs an ``error`` event, so stderr stays JSON.
        An :class:`IncompleteError` is a finished job's outcome, not a failure: its warnings
        show as ``Warning:`` lines (with JSON logs the job has logged them as events). The
        settings it names read as options, or as a job file's keys when ``petsync run`` marked
        it so (:meth:`~petsync.core.errors.PetsyncError.shown_to`).
        """
        terms = exc.reader or self.terms
        if isinstance(exc, IncompleteError):
            for warning in [] if self.json_logs else exc.warnings:
                said = self.redact(render(warning, terms))
                click.echo(terminal_line(f"Warning: {said}"), err=True)
            return
        self._echo(self.redact(exc.render(terms)), type(exc).__name__, int(exc.exit_code))

    def echo_usage_error(self, exc: click.ClickException) -> None:
        """A command-line mistake click found, as an ``error`` event (JSON logs only)."""
        self._echo(exc.format_message(), type(exc).__name__, exc.exit_code)

    def echo_bug(self, exc: Exception) -> None:
        """An exception petsync did not mean to raise: a bug, exit 1.

        One line (with JSON logs one ``error`` event) saying so and where to report it;
        the traceback only at ``--log-level debug``.
        """
        said = shown_text(self.redact(" ".join(str(exc).split())), BUG_MESSAGE_LIMIT)
        message = (
            f"internal error, a bug in petsync {__version__}: {type(exc).__name__}: {said}. "
            + bug_report_request()
            + ("" if self.debug else "; --log-level debug shows the traceback")
        )
        traceback_text = "".join(traceback.format_exception(exc)) if self.debug else None
        if self.json_logs:
            fields: dict[str, object] = {"message": message, "error": type(exc).__name__}
            fields.update(exit_code=int(ExitCode.FAILURE), bug=True)
            if traceback_text is not None:
                fields["traceback"] = self.redact(traceback_text)
            logging.getLogger("petsync.cli").error("error", extra={"fields": fields})
            return
        click.echo(terminal_line(f"Error: {message}"), err=True)
        if traceback_text is not None:
            click.echo(self.redact(traceback_text).rstrip("\n"), err=True)

    def _echo(self, message: str, error: str, exit_code: int) -> None:
        if self.json_logs:
            fields = {"message": terminal_line(message), "error": error, "exit_code": exit_code}
            logging.getLogger("petsync.cli").error("error", extra={"fields": fields})
        else:
            click.echo(terminal_line(f"Error: {message}"), err=True)


def terminal_line(text: str) -> str:
    """One line for the terminal: control characters escaped, whatever their origin.

    The client already escapes and cuts what a server sent (:func:`shown_text` in its
    messages); this is the last barrier before stderr, so a path that forgot cannot clear
    the screen or retitle the window, and a line past :data:`TERMINAL_LINE_LIMIT`
    characters (petsync's own are far shorter) is cut, saying so.
    """
    return shown_text(text, TERMINAL_LINE_LIMIT)


def bug_report_place() -> str | None:
    """Where to report a bug: the package's ``Issues`` URL, when its metadata names one."""
    import importlib.metadata  # a bug's report only: it costs every command 13 ms

    try:
        urls: list[str] = importlib.metadata.metadata("petsync").get_all("Project-URL") or []
    except importlib.metadata.PackageNotFoundError:
        urls = []
    for entry in urls:
        label, _, url = str(entry).partition(",")
        if label.strip().lower() in {"issues", "bug tracker", "bugs"} and url.strip():
            return url.strip()
    return None


def bug_report_request() -> str:
    """The request to report a bug: at the tracker the package metadata names, if any.

    With no tracker named, no place is made up: the request names none.
    """
    place = bug_report_place()
    where = f" at {place}" if place else ""
    return f"Please report it{where} with the command you ran"


pass_state = click.make_pass_decorator(CliState)
