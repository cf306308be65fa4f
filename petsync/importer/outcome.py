"""What an import did: :class:`ImportReport`, its exit code and its JSON form.

The report is what ``petsync import`` prints, what ``--report`` writes and what the
metrics file counts. Library callers read its fields, or call ``raise_for_outcome()`` to
turn anything short of a full import into an exception.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from petsync.core.apikey import redact
from petsync.core.errors import ExitCode, IncompleteError, PetsyncError
from petsync.core.settings_table import MAP
from petsync.core.wording import LIBRARY, Placeholder, Said, Terms, render
from petsync.importer.output_csv import write_text_atomic
from petsync.importer.output_rows import Outcome

if TYPE_CHECKING:
    from petsync.importer.outputs import WrittenOutputs
    from petsync.importer.precheck import CheckedInput
    from petsync.importer.sender import SendResult

logger = logging.getLogger(__name__)


@dataclass
class ImportReport:
    """What an import did. ``stop`` holds the error that ended the run early, if any.

    Counts are over the whole file as the journal now stands, except ``created`` (this
    run) and ``already_created`` (earlier runs). ``pending`` rows were not sent (a stop,
    ``--max-errors``); ``would_send`` counts the valid rows of a dry run.
    """

    source: str
    dry_run: bool
    rows_read: int = 0
    skipped_blank: int = 0
    created: int = 0
    already_created: int = 0
    rejected_local: int = 0
    rejected_api: int = 0
    uncertain: int = 0
    pending: int = 0
    would_send: int = 0
    encoding: str | None = None
    encoding_notice: Said | None = None
    delimiter: str | None = None
    sheet: str | None = None
    header_row: int = 1  # rows above it were skipped (a title, notes, blank rows)
    # A workbook's merged cells below the header: mode, cells filled, ranges.
    merged_cells: dict[str, Any] | None = None
    columns: dict[str, str] = field(default_factory=dict)
    # Columns no field is read from (carried to the output files, not sent), and the
    # the mappings that would send one where its header suggests a field.
    columns_not_sent: list[str] = field(default_factory=list)
    map_hints: list[Said] = field(default_factory=list)
    # Rows repeating an earlier row of the sheet: how many, the first few as [row, first
    # row], and whether they were sent (allow_duplicates) or left out.
    duplicates: int = 0
    duplicate_rows: list[list[int]] = field(default_factory=list)
    duplicates_sent: bool = False
    normalisations: dict[str, int] = field(default_factory=dict)
    elapsed_seconds: float = 0.0
    requests: int = 0
    retries: int = 0
    journal_fsyncs: int = 0
    journal_fsync_seconds: float = 0.0
    concurrency_final: int | None = None
    concurrency_lowest: int | None = None
    files: dict[str, str] = field(default_factory=dict)
    already_imported: bool = False  # the same bytes were imported to the end before
    settled_created: int = 0
    settled_not_created: int = 0
    settled_undecided: int = 0
    # Rows settling left uncertain, by content: (row numbers, ids of pets that may be theirs).
    settled_candidates: list[tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    archived_to: str | None = None
    archived: list[str] = field(default_factory=list)  # the names of the files moved there
    notices: list[Said] = field(default_factory=list)  # earlier files of this name unfinished
    # The first rejected rows: row (its petsync_row), source, code, field, message.
    first_rejects: list[dict[str, str]] = field(default_factory=list)
    stopped_reason: Said | None = None
    stop: PetsyncError | None = None

    @classmethod
    def of_check(cls, checked: CheckedInput, dry_run: bool, duplicates_sent: bool) -> ImportReport:
        """A report of what the check stage found (the file, how it was read, its rows)."""
        repeats = checked.repeats
        notices: list[Said] = [
            MAP.given(Placeholder(repr(text)))
            + f" names no column of {checked.path.name}; its columns are read by their headers"
            for text in checked.columns.ignored_maps
        ]
        merged = checked.merged
        if merged is not None:
            notices.append(merged.notice())
        return cls(
            source=str(checked.path),
            dry_run=dry_run,
            rows_read=checked.rows_read,
            skipped_blank=checked.blank_rows,
            encoding=checked.encoding_label,
            encoding_notice=checked.encoding_notice,
            delimiter=checked.delimiter,
            sheet=checked.sheet,
            header_row=checked.header_row,
            merged_cells=None
            if merged is None
            else {"mode": merged.mode, "cells": merged.cells, "ranges": list(merged.ranges)},
            columns=checked.column_names,
            columns_not_sent=checked.unsent_columns,
            map_hints=checked.columns.map_hints(checked.header),
            duplicates=0 if repeats is None else repeats.count,
            duplicate_rows=[] if repeats is None else [list(pair) for pair in repeats.listed],
            duplicates_sent=duplicates_sent,
            notices=notices,
        )

    def count_sent(self, sent: SendResult) -> None:
        """Take in what the send stage did."""
        if sent.mismatched:
            shown = ", ".join(map(str, sent.mismatched[:10]))
            more = f" and {len(sent.mismatched) - 10} more" if len(sent.mismatched) > 10 else ""
            self.notices.append(
                f"{len(sent.mismatched)} rows were created, but the API answered other values "
                f"than were sent (rows {shown}{more}; the journal says which): check those pets"
            )
        self.created = sent.created
        self.normalisations = sent.normalisations
        self.stop = sent.stop
        self.stopped_reason = sent.stopped_reason
        self.concurrency_final = sent.concurrency_final
        self.concurrency_lowest = sent.concurrency_lowest

    def count_written(self, written: WrittenOutputs) -> None:
        """Take in what the write stage found: each outcome's count, the files, notices."""
        counts = written.counts
        self.rejected_local = counts[Outcome.REJECTED_LOCAL]
        self.rejected_api = counts[Outcome.REJECTED_API]
        self.uncertain = counts[Outcome.UNCERTAIN]
        self.pending = counts[Outcome.PENDING]
        self.would_send = counts[Outcome.WOULD_SEND]
        if self.dry_run:  # no send stage counted them
            self.normalisations = written.normalisations
            self.already_created = counts[Outcome.CREATED]  # by a fix of a rejected row
        else:  # the accepted file lists every row created so far; this run made `created`
            self.already_created = max(0, counts[Outcome.CREATED] - self.created)
        self.notices.extend(written.notices)
        self.first_rejects = list(written.first_rejects)
        self.files = dict(written.files)

    def outputs_failed(self, exc: Exception, journal: Path) -> None:
        """The write stage failed after pets were created: a stop that says what and why."""
        logger.debug("import_outputs_failed", exc_info=exc)
        why: Said = exc.words if isinstance(exc, PetsyncError) else f"{type(exc).__name__}: {exc}"
        self.stop = PetsyncError(
            f"{self.created} pets were created (the journal {journal} records them), "
            "but the output files could not be written: "
            + why
            + ". Fix that, then re-run the same command: it sends nothing twice and writes "
            "the files"
        )
        self.stopped_reason = "the output files could not be written"

    @property
    def rejected(self) -> int:
        """Rows rejected, locally or by the API."""
        return self.rejected_local + self.rejected_api

    @property
    def rows_per_second(self) -> float:
        """Rows read per second of the whole run (0 before it ends)."""
        return self.rows_read / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    @property
    def exit_code(self) -> ExitCode:
        """0 when every row was created (or would be, in a dry run); else 4, or the stop's."""
        if self.stop is not None:
            return self.stop.exit_code
        if self.rejected_local or self.rejected_api or self.uncertain or self.pending:
            return ExitCode.INCOMPLETE
        return ExitCode.OK

    def raise_for_stop(self) -> None:
        """Raise the error that stopped the run, if one did (library callers)."""
        if self.stop is not None:
            raise self.stop

    def raise_for_outcome(self) -> None:
        """Raise the stop's error, or :class:`IncompleteError` (exit 4) when rows are left.

        The output files are written by then; they say which rows and why.
        """
        self.raise_for_stop()
        if self.exit_code is not ExitCode.OK:
            raise IncompleteError(
                f"{self.source}: {self.rejected} rows rejected, {self.uncertain} uncertain, "
                f"{self.pending} pending"
            )

    def metric_counts(self) -> dict[str, int]:
        """The run's counts for the metrics file, by metric name without ``petsync_``."""
        return {
            "rows_created": self.created,
            "rows_rejected": self.rejected,
            "rows_uncertain": self.uncertain,
        }

    def to_json(self, terms: Terms | None = LIBRARY) -> dict[str, Any]:
        """The report as the ``--report`` file holds it (the stop's message redacted), its
        messages in ``terms``; ``None`` keeps them messages, for a log handler to put in its
        reader's terms (and redact) when it writes the line."""

        def said(message: Said) -> Said:
            return message if terms is None else render(message, terms)

        stopped = None if self.stopped_reason is None else said(self.stopped_reason)
        return {
            "source": self.source,
            "dry_run": self.dry_run,
            "rows_read": self.rows_read,
            "skipped_blank": self.skipped_blank,
            "created": self.created,
            "already_created": self.already_created,
            "rejected_local": self.rejected_local,
            "rejected_api": self.rejected_api,
            "uncertain": self.uncertain,
            "pending": self.pending,
            "would_send": self.would_send,
            "encoding": self.encoding,
            "encoding_notice": None if self.encoding_notice is None else said(self.encoding_notice),
            "delimiter": self.delimiter,
            "sheet": self.sheet,
            "header_row": self.header_row,
            "merged_cells": self.merged_cells,
            "columns": self.columns,
            "columns_not_sent": self.columns_not_sent,
            "map_hints": [said(hint) for hint in self.map_hints],
            "duplicates": self.duplicates,
            "duplicate_rows": self.duplicate_rows,
            "duplicates_sent": self.duplicates_sent,
            "normalisations": self.normalisations,
            "elapsed_seconds": round(self.elapsed_seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
            "requests": self.requests,
            "retries": self.retries,
            "journal_fsyncs": self.journal_fsyncs,
            "journal_fsync_seconds": round(self.journal_fsync_seconds, 3),
            "concurrency_final": self.concurrency_final,
            "concurrency_lowest": self.concurrency_lowest,
            "files": self.files,
            "already_imported": self.already_imported,
            "settled": {
                "created": self.settled_created,
                "not_created": self.settled_not_created,
                "undecided": self.settled_undecided,
                "undecided_rows": [
                    {"rows": list(rows), "candidate_ids": list(ids)}
                    for rows, ids in self.settled_candidates
                ],
            },
            "archived_to": self.archived_to,
            "archived": self.archived,
            "notices": [said(notice) for notice in self.notices],
            "first_rejects": self.first_rejects,
            "stopped_reason": stopped,
            "error": None
            if self.stop is None
            else self.stop.words
            if terms is None
            else redact(self.stop.render(terms)),
            "exit_code": int(self.exit_code),
        }

    def write_json(self, path: Path, terms: Terms = LIBRARY) -> None:
        """Write :meth:`to_json` (in ``terms``) to ``path`` atomically."""
        write_text_atomic(path, json.dumps(self.to_json(terms), indent=2) + "\n")
