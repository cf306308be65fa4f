"""The ``petsync`` group: logging start-up, the commands, and the one error boundary.

Every non-zero exit leaves through :class:`PetsyncGroup`: a command (or the library under
it) raises a :class:`~petsync.core.errors.PetsyncError`, the group shows it once and exits
with the error's code. A job that finished with an incomplete result raises
:class:`~petsync.core.errors.IncompleteError` (exit 4) after its summary is printed.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from petsync._version import __version__
from petsync.cli.check import check, get
from petsync.cli.config import config
from petsync.cli.demo import demo
from petsync.cli.diff import diff_command
from petsync.cli.export import export_command
from petsync.cli.history import history_command
from petsync.cli.import_command import import_command
from petsync.cli.options import log_format_option, log_level_option
from petsync.cli.report import report_command
from petsync.cli.run import run
from petsync.cli.serve import serve
from petsync.cli.snapshots import snapshots_command
from petsync.cli.state import CliState
from petsync.core.errors import ExitCode, PetsyncError
from petsync.core.wording import COMMAND_LINE
from petsync.ops.logs import configure_logging, keys_from_environ


class PetsyncGroup(click.Group):
    """Catches every error once: shown on stderr, exit with the error's code.

    A :class:`PetsyncError` exits with its own code. Any other exception is a bug: one line
    (a JSON ``error`` event with JSON logs) and exit 1, the traceback only at
    ``--log-level debug``. With JSON logs a command-line mistake click finds is an ``error``
    event too, so every line on stderr is JSON.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PetsyncError as exc:
            _state(ctx).echo_error(exc)
            ctx.exit(int(exc.exit_code))
        except (click.exceptions.Exit, click.Abort):
            raise  # click's own ways of ending (RuntimeErrors, but no bugs)
        except BrokenPipeError:
            raise  # stdout's reader left (`| head -1`): no bug; main() ends quietly
        except click.ClickException as exc:
            state = _state(ctx)
            if not state.json_logs:
                raise  # click prints the usage line and the error
            state.echo_usage_error(exc)
            ctx.exit(exc.exit_code)
        except Exception as exc:
            _state(ctx).echo_bug(exc)
            ctx.exit(int(ExitCode.FAILURE))


def _state(ctx: click.Context) -> CliState:
    # No state yet only if the group's own start-up failed: show it as plain text.
    return ctx.find_object(CliState) or CliState()


@click.group(cls=PetsyncGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="petsync")
@log_format_option
@log_level_option
@click.pass_context
def cli(ctx: click.Context, log_format: str, log_level: str) -> None:
    """Export the Petstore catalogue to snapshots and import animals from spreadsheets.

    \b
    Exit codes: 0 success, 1 failure, 2 usage or configuration error,
    3 authentication refused (401), 4 finished but incomplete,
    75 skipped: another run holds the lock, 130 stopped by Ctrl-C,
    143 stopped by SIGTERM.
    """
    environ = dict(os.environ)
    json_logs = log_format == "json"
    handle = configure_logging(
        "json" if json_logs else "text",
        stream=sys.stderr,  # CliRunner swaps it; click.get_text_stream is deprecated
        level=log_level,
        keys=keys_from_environ(environ),
        outcomes=json_logs,  # as text, the command prints a job's warnings itself, once
        terms=COMMAND_LINE,  # a warning naming a setting names its option
    )
    ctx.call_on_close(handle.close)
    ctx.obj = CliState(log=handle, json_logs=json_logs, environ=environ, debug=log_level == "debug")


for command in (check, get, serve, export_command, demo, diff_command, import_command, run, config):
    cli.add_command(command)
cli.add_command(history_command)
cli.add_command(report_command)
cli.add_command(snapshots_command)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="petsync")


if __name__ == "__main__":  # pragma: no cover
    main()
