"""Several input files in one import run: each imported in turn, one outcome for the run.

``petsync import 'inbox/*.csv'`` (or several FILE arguments, or a job file's glob) imports
each file with its own journal and outputs (:func:`~petsync.importer.run.run_import`). A
file whose input is bad (exit 2) does not keep the others from importing; a stop (a
signal), a refused key or a failing API ends the run, since the next file would meet it
too. The run exits with the worst of its files' codes (``core.errors.SEVERITY``): a signal,
then a refused key, input errors, failures, an incomplete import, success.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from petsync.core.errors import (
    ExitCode,
    IncompleteError,
    PetsyncError,
    StoppedError,
    UsageError,
    severity,
)
from petsync.core.files import atomic_write_text
from petsync.core.stop import StopRequest
from petsync.core.wording import LIBRARY, Terms
from petsync.importer.config import ImportConfig
from petsync.importer.inbox import archive_import, fully_processed
from petsync.importer.outcome import ImportReport
from petsync.importer.run import ImportClient, run_import
from petsync.importer.sender import SendProgress


@dataclass
class BatchReport:
    """The reports of one import run over one or more files, and the run's one outcome.

    ``single`` is True when the run named exactly one file (no glob): its report is then
    the run's, as with one ``petsync import FILE``.
    """

    single: bool
    reports: list[ImportReport] = field(default_factory=list)
    failures: list[tuple[Path, PetsyncError]] = field(default_factory=list)

    def metric_counts(self) -> Mapping[str, int]:
        """The files' counts added up, for the metrics file."""
        counts: dict[str, int] = {}
        for report in self.reports:
            for name, value in report.metric_counts().items():
                counts[name] = counts.get(name, 0) + value
        return counts

    @property
    def pending(self) -> int:
        return sum(report.pending for report in self.reports)

    def errors(self) -> list[PetsyncError]:
        """Every error that ended a file early, in the order the files ran."""
        found: list[PetsyncError] = [error for _, error in self.failures]
        found += [report.stop for report in self.reports if report.stop is not None]
        return found

    @property
    def exit_code(self) -> int:
        codes = [int(error.exit_code) for error in self.errors()]
        codes += [int(report.exit_code) for report in self.reports]
        return max(codes or [0], key=severity)

    def to_json(self, terms: Terms = LIBRARY) -> dict[str, Any]:
        """The run as JSON: one file's report as it is, several under ``imports``; its
        messages in ``terms``."""
        if self.single and self.reports and not self.failures:
            return self.reports[0].to_json(terms)
        return {
            "imports": [report.to_json(terms) for report in self.reports],
            "not_imported": [
                {"source": str(p), "error": e.render(terms)} for p, e in self.failures
            ],
            "exit_code": self.exit_code,
        }

    def write_json(self, path: Path, terms: Terms = LIBRARY) -> None:
        """Write :meth:`to_json` (in ``terms``) to ``path`` atomically."""
        atomic_write_text(path, json.dumps(self.to_json(terms), indent=2) + "\n")

    def raise_for_outcome(self) -> None:
        """Raise the error of the worst outcome (after the summaries were shown)."""
        code = self.exit_code
        if code == ExitCode.OK:
            return
        for error in self.errors():
            if int(error.exit_code) == code:
                raise error
        if self.single and self.reports:
            self.reports[0].raise_for_outcome()
        raise IncompleteError(
            f"{len(self.reports)} files imported, some rows rejected, uncertain or pending"
        )


def run_batch(
    paths: Sequence[Path],
    config_for: Callable[[Path], ImportConfig],
    client: ImportClient | None,
    *,
    single: bool,
    stop: StopRequest | None = None,
    archive_dir: Path | None = None,
    today: Callable[[], dt.date] = dt.date.today,
    progress_for: Callable[[Path], SendProgress | None] = lambda path: None,
    on_report: Callable[[ImportReport], None] = lambda report: None,
    on_failure: Callable[[Path, PetsyncError], None] = lambda path, error: None,
    on_checked: Callable[[ImportReport], None] | None = None,
) -> BatchReport:
    """Import each of ``paths`` in turn (see the module docstring); return the run's report.

    ``on_report`` and ``on_failure`` see each file's outcome as it ends (the command line
    prints its summary there); ``progress_for`` gives a file its progress display;
    ``on_checked`` sees each file's report once it is read, before anything is sent.
    """
    batch = BatchReport(single=single)
    for path in paths:
        if stop is not None and stop.requested:  # files not started are left for next time
            error = stop.error(f"stopped by {stop.description} before this file")
            batch.failures.append((path, error))
            on_failure(path, error)
            continue
        try:
            report = run_import(
                config_for(path),
                client,
                stop=stop,
                progress=progress_for(path),
                on_checked=on_checked,
            )
        except (UsageError, StoppedError) as exc:
            if single:
                raise
            batch.failures.append((path, exc))  # a bad file does not stop the others
            on_failure(path, exc)
            continue
        if archive_dir is not None and fully_processed(report):
            archive_import(path, report, archive_dir, today())
        batch.reports.append(report)
        on_report(report)
        if report.stop is not None and not isinstance(report.stop, UsageError):
            break  # a stop, a refused key, the API down: the next file would meet it too
    return batch
