"""What ``petsync import`` shows while its files import: a live line each, then a summary."""

from __future__ import annotations

import sys
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import click

from petsync.cli.import_progress import ImportProgressLine
from petsync.cli.render import import_check_lines, import_summary
from petsync.cli.state import terminal_line
from petsync.core.errors import PetsyncError
from petsync.core.text import shown_text

if TYPE_CHECKING:
    from petsync.importer.report import ImportReport


def archived(report: ImportReport) -> str:
    """Where a file went, with the names of the files moved (its reject file among them)."""
    return f"{report.archived_to}/ ({', '.join(report.archived)} moved there)"


class ImportShown:
    """What the command shows while its files import: a live line each, then its summary."""

    def __init__(self, *, text: bool, live: bool) -> None:
        self._text = text
        self._live = live
        self._line: ImportProgressLine | None = None

    def progress(self, path: Path) -> ImportProgressLine | None:
        self._end_line()
        if self._live:
            self._line = ImportProgressLine(sys.stderr, shown_text(path.name, 80))
        return self._line

    def checked(self, report: ImportReport) -> None:
        """Before sending: what will not be sent as the sheet shows it (said once, here)."""
        if self._text:
            for line in import_check_lines(report):
                click.echo(f"{report.source}: {line}")

    def report(self, report: ImportReport) -> None:
        self._end_line()
        if self._text:
            # A file name can hold anything, a newline too: every line is shown escaped.
            for line in import_summary(report, check_lines=False):
                click.echo(terminal_line(line))
            if report.archived_to:
                click.echo(terminal_line(f"archived:  {archived(report)}"))

    def failure(self, path: Path, error: PetsyncError) -> None:
        self._end_line()
        if self._text:
            click.echo(terminal_line(f"{path}: not imported: {error}"))

    def _end_line(self) -> None:
        if self._line is not None:
            self._line.close()
            self._line = None

    def __enter__(self) -> ImportShown:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._end_line()
