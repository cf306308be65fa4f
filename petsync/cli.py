"""The ``petsync`` command line: thin over the library.

Each command turns its options into a config object, calls one library function, renders
its report and exits with the documented code. Only this module imports click; heavy
libraries (pandas, pyarrow, the server) are imported inside the commands that need them,
so ``petsync --help`` starts fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from petsync._version import __version__
from petsync.apikey import redact
from petsync.errors import ExitCode, PetsyncError

F = TypeVar("F", bound=Callable[..., Any])


class PetsyncGroup(click.Group):
    """Catches :class:`PetsyncError` once: the message on stderr, the error's exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PetsyncError as exc:
            click.echo(f"Error: {redact(str(exc))}", err=True)
            ctx.exit(int(exc.exit_code))


def target_options(func: F) -> F:
    """Options shared by every command that talks to the API."""
    func = click.option(
        "--api-key-file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="File holding the API key (mode 600). Default: the PETSYNC_API_KEY variable.",
    )(func)
    func = click.option(
        "--base-url",
        metavar="URL",
        help="API base address ending with /v1. Default: the PETSYNC_BASE_URL variable.",
    )(func)
    return func


def _environ() -> dict[str, str]:
    return dict(os.environ)


@click.group(cls=PetsyncGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="petsync")
def cli() -> None:
    """Export the Petstore catalogue to snapshots and import animals from spreadsheets.

    \b
    Exit codes: 0 success, 1 failure, 2 usage or configuration error,
    3 authentication refused (401), 4 finished but incomplete.
    """


# -- commands are added below, one section each ------------------------------------------
# Each section is owned by one piece of work; insert your commands right after your marker.

# -- section: check, get -------------------------------------------------------------------

# -- section: serve ------------------------------------------------------------------------

# -- section: export, demo, diff -----------------------------------------------------------

# -- section: import -----------------------------------------------------------------------

# -- section: run, config ------------------------------------------------------------------


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="petsync")


__all__ = ["ExitCode", "cli", "main", "target_options"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
