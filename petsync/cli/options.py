"""Options shared by several commands, each defined once.

:func:`target_options` adds ``--base-url``, ``--api-key-file``, ``--env``, ``--config`` and
``--allow-insecure-http`` and hands the command one :class:`TargetOptions` as ``target``.
Choices come from the home of their fact (the log formats from :mod:`petsync.ops.logs`,
statuses from :mod:`petsync.core.models`, ...), never typed out here.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from petsync.cli.state import CliState, TargetOptions
from petsync.core.errors import ConfigError
from petsync.core.stop import DEFAULT_GRACE_SECONDS
from petsync.export.config import EXTRA_FIELDS_MODES
from petsync.ops.limits import SIZE_EXAMPLE, ClientLimits, format_size, parse_size
from petsync.ops.logs import DEFAULT_LOG_LEVEL, LOG_FORMATS, LOG_LEVELS
from petsync.storage.location import parse_location

Command = Callable[..., None]
_DEFAULT_LIMITS = ClientLimits()


if TYPE_CHECKING:  # generic from click 8.2 on; petsync allows 8.1
    _IntType = click.ParamType[int, object]
else:
    _IntType = click.ParamType


class ByteSize(_IntType):
    """A size in bytes: ``32MiB``, ``500kB``, ``1048576`` (:func:`parse_size`).

    A type rather than a callback: click converts a default through the type also when a
    job file invokes the command, and never runs a callback there.
    """

    name = "size"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_size(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


BYTE_SIZE = ByteSize()


# The target options, in the order --help lists them; each one's parameter name is the
# TargetOptions field it fills (and the job-file key).
_TARGET_OPTIONS: tuple[Callable[[Command], Command], ...] = (
    click.option(
        "--base-url",
        metavar="URL",
        help="API base address ending with /v1. Default: PETSYNC_BASE_URL, then the "
        "environment's base_url in the config file.",
    ),
    click.option(
        "--api-key-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="File holding the API key (mode 600). Default: PETSYNC_<ENV>_API_KEY, then the "
        "environment's api_key_file, then PETSYNC_API_KEY.",
    ),
    click.option(
        "--env",
        metavar="NAME",
        help="Environment of the config file to use. Default: PETSYNC_ENV, then production.",
    ),
    click.option(
        "--config",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Config file to read. Default: PETSYNC_CONFIG, then ./petsync.toml, then "
        "~/.config/petsync/petsync.toml.",
    ),
    click.option(
        "--allow-insecure-http",
        is_flag=True,
        help="Allow plain http:// to a host that is not loopback (the key crosses in clear).",
    ),
    click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        metavar="SECONDS",
        help="Time one request may take in all: connect, send, the whole answer. Default: the "
        f"environment's timeout, else {_DEFAULT_LIMITS.timeout:g}.",
    ),
    click.option(
        "--retries",
        type=click.IntRange(min=0),
        metavar="N",
        help="Retries of a request that failed in a way that can recover (connection lost, "
        f"429, 5xx). Default: the environment's retries, else {_DEFAULT_LIMITS.retries}.",
    ),
    click.option(
        "--retry-budget",
        type=click.FloatRange(min=0),
        metavar="SECONDS",
        help="Time a request's retries may take in all. Default: the environment's "
        f"retry_budget, else {_DEFAULT_LIMITS.retry_budget:g}.",
    ),
    click.option(
        "--max-response-size",
        type=BYTE_SIZE,
        metavar="SIZE",
        help=f"Largest answer read, decompressed ({SIZE_EXAMPLE}); a bigger one fails. "
        "Default: the environment's max_response_size, else "
        f"{format_size(_DEFAULT_LIMITS.max_response_size).replace(' ', '')}.",
    ),
)
# sources is no option: it says where each value came from.
TARGET_PARAMS: tuple[str, ...] = tuple(
    field.name for field in dataclasses.fields(TargetOptions) if field.name != "sources"
)


def target_options(command: Command) -> Command:
    """Add the target options; the command receives them as ``target: TargetOptions``.

    Under ``petsync run`` the running job's target (its file's values, overridden by
    ``run``'s own options) is the one handed on.
    """

    @functools.wraps(command)
    def with_target(*args: Any, **params: Any) -> None:
        given = TargetOptions(**{name: params.pop(name) for name in TARGET_PARAMS})
        state = click.get_current_context().find_object(CliState)
        job = state.job if state is not None else None
        command(*args, target=job.target if job is not None else given, **params)

    decorated: Command = with_target
    for option in reversed(_TARGET_OPTIONS):
        decorated = option(decorated)
    return decorated


class LocationType(click.Path):
    """A snapshot location: a local directory, or an object-store URI (s3://, gs://, ...).

    Checked when the command line is read (an unsupported scheme or a URI carrying
    credentials is exit 2, before anything is fetched); the value stays the text given. A
    kind of path, so a job file's key takes "a path (string)" as before.
    """

    name = "location"

    def __init__(self) -> None:
        super().__init__(file_okay=False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:

        text = str(value)
        what = param.opts[0] if param is not None and param.opts else "location"
        try:
            parse_location(text, what=what)
        except ConfigError as exc:
            self.fail(str(exc), param, ctx)
        return text


LOCATION = LocationType()

metrics_file_option = click.option(
    "--metrics-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write Prometheus metrics here after the run (node_exporter textfile, *.prom).",
)

json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the result as one JSON document on one line of stdout, instead of the text "
    "summary (with --log-format json, the whole output is JSON lines).",
)

grace_option = click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=DEFAULT_GRACE_SECONDS,
    show_default=True,
    metavar="SECONDS",
    help="After SIGTERM or Ctrl-C: how long requests already sent may take to finish "
    "(a second signal stops at once).",
)

log_format_option = click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default="text",
    show_default=True,
    envvar="PETSYNC_LOG_FORMAT",
    help="Log lines on stderr: text, or json (one object per line: time, level, event, fields).",
)

log_level_option = click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS),
    default=DEFAULT_LOG_LEVEL,
    show_default=True,
    envvar="PETSYNC_LOG_LEVEL",
    help="Least severe log lines shown.",
)


extra_fields_option = click.option(
    "--extra-fields",
    "extra_fields",
    type=click.Choice(EXTRA_FIELDS_MODES),
    help="Fields the API sends beyond the interface's: drop them (said in the output), keep "
    "them as columns after the interface's, or fail (exit 1, nothing published). Default: "
    "the environment's extra_fields in petsync.toml, else drop.",
)
