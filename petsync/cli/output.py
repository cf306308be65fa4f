"""Where a command's result goes: text lines, or one JSON document, and the ``--report`` file.

With ``--json`` a command prints its result as ONE JSON document on ONE line of stdout, in
place of its text summary, so a log that also takes ``--log-format json`` lines from stderr
stays JSON lines throughout. ``--report -`` means the same for the import's report: stdout,
not a file named ``-``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import click

from petsync.core.files import check_writable_file
from petsync.core.settings_table import REPORT
from petsync.core.wording import Terms


class _JsonReport(Protocol):
    def write_json(self, path: Path, terms: Terms) -> None: ...


STDOUT = "-"


def echo_json(document: Mapping[str, object]) -> None:
    """Print ``document`` as one line of JSON on stdout (non-ASCII kept, no NaN)."""
    click.echo(json.dumps(document, ensure_ascii=False, allow_nan=False, default=str))


@dataclass(frozen=True)
class ReportTo:
    """Where ``--report`` sends the import's JSON report: nowhere, a file, or stdout (``-``).

    >>> ReportTo.parse(Path("-")).stdout
    True
    """

    path: Path | None = None

    @property
    def stdout(self) -> bool:
        return self.path is not None and str(self.path) == STDOUT

    @classmethod
    def parse(cls, path: Path | None) -> ReportTo:
        """Take ``--report``'s value, checking a file location before anything is sent."""
        report_to = cls(path)
        if path is not None and not report_to.stdout:
            check_writable_file(path, "report file (" + REPORT + ")", parent_made=True)
        return report_to

    def write_file(self, report: _JsonReport, terms: Terms) -> None:
        """Write the report to the ``--report`` file, if one was named (stdout is the
        command's to print, in place of its summary)."""
        if self.path is not None and not self.stdout:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            report.write_json(self.path, terms)
