"""What ``petsync import`` shows while its files import: a live line each, then a summary."""

from __future__ import annotations

import shlex
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
from petsync.core.wording import Terms

if TYPE_CHECKING:
    from petsync.importer.outcome import ImportReport


def archived(report: ImportReport) -> str:
    """Where a file went, with the names of the files moved (its reject file among them)."""
    return f"{report.archived_to}/ ({', '.join(report.archived)} moved there)"


def fix_options(state_dir: Path | None, category_map: Path | None) -> tuple[str, ...]:
    """The options given here that importing a fixed reject file needs as well: the same
    journals (``--state-dir``) and category names (``--category-map``). The environment's
    own keys apply to the fix by themselves."""
    given = (("--state-dir", state_dir), ("--category-map", category_map))
    return tuple(f"{name} {shlex.quote(str(path))}" for name, path in given if path is not None)


class ImportShown:
    """What the command shows while its files import: a live line each, then its summary."""

    def __init__(
        self, *, text: bool, live: bool, terms: Terms, fix_options: tuple[str, ...] = ()
    ) -> None:
        self._text = text
        self._terms = terms  # whose terms the library's messages are shown in
        self._live = live
        self._fix_options = fix_options  # what the printed fix command must carry
        self._line: ImportProgressLine | None = None

    def progress(self, path: Path) -> ImportProgressLine | None:
        self._end_line()
        if self._live:
            self._line = ImportProgressLine(sys.stderr, shown_text(path.name, 80))
        return self._line

    def checked(self, report: ImportReport) -> None:
        """Before sending: what will not be sent as the sheet shows it (said once, here)."""
        if self._text:
            for line in import_check_lines(report, self._terms):
                click.echo(f"{report.source}: {line}")

    def report(self, report: ImportReport) -> None:
        self._end_line()
        if self._text:
            # A file name can hold anything, a newline too: every line is shown escaped.
            lines = import_summary(
                report, self._terms, check_lines=False, fix_options=self._fix_options
            )
            at = next((i + 1 for i, line in enumerate(lines) if line.startswith("rejects:")), None)
            if at is not None:  # the first rejected rows, under the file that has them all
                lines[at:at] = rejected_lines(report)
            for line in lines:
                click.echo(terminal_line(line))
            if report.archived_to:
                click.echo(terminal_line(f"archived:  {archived(report)}"))

    def failure(self, path: Path, error: PetsyncError) -> None:
        self._end_line()
        if self._text:
            click.echo(terminal_line(f"{path}: not imported: {error.render(self._terms)}"))

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


REASON_CHARS = 240  # of a rejected row's reason on the terminal (the reject file has it whole)


def rejected_lines(report: ImportReport) -> list[str]:
    """The first rejected rows (row, field, reason), then how many more the file holds.

    >>> from petsync.importer.outcome import ImportReport
    >>> report = ImportReport("p.csv", dry_run=True, rejected_local=3, first_rejects=[
    ...     {"row": "4", "field": "categoryId", "message": "categoryId 'x' is not..."}])
    >>> rejected_lines(report)
    ["  row 4, categoryId: categoryId 'x' is not...", '  and 2 more rejected rows']
    """
    lines = []
    for rejected in report.first_rejects:
        field = f", {rejected['field'].replace(';', ', ')}" if rejected.get("field") else ""
        reason = shown_text(rejected.get("message", ""), REASON_CHARS)
        lines.append(f"  row {rejected['row']}{field}: {reason}")
    rest = report.rejected - len(report.first_rejects)
    if rest > 0:
        lines.append(f"  and {rest} more rejected row{'s' if rest > 1 else ''}")
    return lines
