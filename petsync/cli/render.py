"""How reports read on a terminal, and as the one JSON document of ``--json``.

Functions here return lines (or a document) and print nothing, so each command echoes them
and a test can compare them whole. The export summary serves ``export`` and ``demo`` alike.
A JSON document holds the same facts as the lines, never the key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from petsync.core.apikey import redact
from petsync.core.text import shown_text
from petsync.core.wording import Terms, render

NOTE_CHARS = 1_000  # of a note or reason built from what a server sent
NO_STATUS_SHOWN = "(no status)"  # a missing status in the text of a diff (null in its JSON)

if TYPE_CHECKING:
    from petsync.client.client import CheckReport
    from petsync.export.outcome import ExportReport
    from petsync.history.diff import SnapshotDiff
    from petsync.importer.batch import BatchReport
    from petsync.importer.outcome import ImportReport
    from petsync.storage.layout import SnapshotInfo


def check_lines(report: CheckReport) -> list[str]:
    """What ``petsync check`` found: base URL, key, paging style, round trip."""
    lines = [
        f"base URL:     {report.base_url}",
        f"key accepted: {'yes' if report.key_accepted else 'no'}",
        f"pagination:   {report.pagination_style}",
    ]
    if report.pagination_note:
        lines.append(f"  note: {shown_text(redact(report.pagination_note), NOTE_CHARS)}")
    lines.append(f"round trip:   {report.round_trip_seconds * 1000:.0f} ms")
    return lines


def check_document(report: CheckReport) -> dict[str, Any]:
    """What ``petsync check --json`` prints: the check report's fields."""
    document = dataclasses.asdict(report)
    if report.pagination_note:
        document["pagination_note"] = redact(report.pagination_note)
    return document


def export_document(report: ExportReport, terms: Terms) -> dict[str, Any]:
    """What ``petsync export --json`` prints: where the snapshot went, its manifest, what was
    pruned, the warnings (in ``terms``) and the exit code."""
    return {
        "snapshot_path": None if report.snapshot_path is None else str(report.snapshot_path),
        **report.manifest,
        "pruned": [str(path) for path in report.pruned],
        "warnings": [redact(render(warning, terms)) for warning in report.warnings],
        "notices": [render(notice, terms) for notice in report.notices],
        "exit_code": int(report.exit_code),
    }


def export_summary(report: ExportReport, terms: Terms) -> list[str]:
    """The human summary of an export (also the demo's), the library's words in ``terms``."""
    counts = ", ".join(f"{status} {count}" for status, count in report.by_status.items())
    unknown = sum(report.unknown_status.values())
    state = "complete" if report.complete else "INCOMPLETE"
    lines = [
        f"snapshot {report.snapshot_date}: {report.pets} pets ({counts}, no status "
        f"{report.no_status}, unknown status {unknown}), quarantined {report.quarantined}",
        f"took {report.duration_seconds:.1f} s, {report.pets_per_second:.0f} pets/s, {state}"
        + (", suspicious drop" if report.drop.flagged else ""),
        f"written to {report.snapshot_path}",
    ]
    if report.pruned:
        lines.append(f"pruned {len(report.pruned)} older snapshot(s)")
    extra = report.extra_fields
    summary = extra.summary()
    if summary is not None:
        lines.append(render(summary, terms))
    lines.extend(f"warning: {render(warning, terms)}" for warning in extra.warnings())
    lines.extend(f"warning: {render(notice, terms)}" for notice in report.notices)
    return lines


def import_check_lines(report: ImportReport, terms: Terms) -> list[str]:
    """What the check pass found that is sent differently from the sheet: the columns no
    field reads (with the ``--map`` that would send one) and the rows repeated; the
    library's words in ``terms``."""
    lines = []
    if report.columns_not_sent:
        shown = ", ".join(repr(title) for title in report.columns_not_sent)
        lines.append(
            f"not sent: columns {shown} (no field of the API reads them; they are copied to "
            "the output files)"
        )
        lines.extend(f"  to send one as status: {render(h, terms)}" for h in report.map_hints)
    if report.duplicates:
        pairs = ", ".join(f"row {row} = row {first}" for row, first in report.duplicate_rows)
        more = "" if len(report.duplicate_rows) == report.duplicates else ", ..."
        done = (
            "each sent as it is (--allow-duplicates)"
            if report.duplicates_sent
            else "sent once; --allow-duplicates sends every copy"
        )
        lines.append(
            f"repeated: {report.duplicates} rows repeat an earlier row ({pairs}{more}): {done}"
        )
    return lines


def import_summary(
    report: ImportReport,
    terms: Terms,
    *,
    check_lines: bool = True,
    fix_options: Sequence[str] = (),
) -> list[str]:
    """The human summary of an import, ending with the command that fixes what is left.

    ``check_lines=False`` leaves out :func:`import_check_lines` (shown before sending).
    ``fix_options`` are the options of this run the fix's import needs too (the command
    line's ``--category-map`` and ``--state-dir``): the printed command carries them.
    """
    read = (
        f"read {report.source}: {_counted_rows(report.rows_read)}, "
        f"{report.skipped_blank} blank skipped"
    )
    if report.sheet is not None:
        read += f", sheet {report.sheet!r}"
    else:
        read += f", encoding {report.encoding}, delimiter {report.delimiter}"
    if report.header_row > 1:
        read += f", header on row {report.header_row}"
    lines = [read]
    if check_lines:
        lines.extend(import_check_lines(report, terms))
    if report.encoding_notice:
        lines.append(f"  note: {render(report.encoding_notice, terms)}")
    lines.extend(f"  note: {render(notice, terms)}" for notice in report.notices)
    if report.dry_run:
        done = f"; already created {report.already_created}" if report.already_created else ""
        if report.uncertain:  # sent by an earlier run, outcome unknown: --settle decides
            done += f"; uncertain {report.uncertain}"
        lines.append(
            f"dry run: {_counted_rows(report.would_send)} would be sent, nothing sent; "
            f"rejected locally {report.rejected_local}{done}"
        )
    else:
        lines.append(
            f"created {report.created}, already done {report.already_created} (earlier runs), "
            f"rejected {report.rejected_local + report.rejected_api} (local "
            f"{report.rejected_local}, api {report.rejected_api}), uncertain "
            f"{report.uncertain}, pending {report.pending}"
        )
    if report.already_imported:
        lines.append("already imported: these bytes were imported to the end before; nothing sent")
    settled = report.settled_created + report.settled_not_created + report.settled_undecided
    if settled:
        lines.append(
            f"settled {settled} uncertain: {report.settled_created} found created, "
            f"{report.settled_not_created} not created (sent now), {report.settled_undecided} "
            "still uncertain"
        )
        lines.extend(_settle_candidates(report))
    if report.normalisations:
        done = ", ".join(f"{name} {count}" for name, count in report.normalisations.items())
        lines.append(f"normalised: {done}")
    lines.append(f"took {report.elapsed_seconds:.1f} s, {report.rows_per_second:.0f} rows/s")
    if report.stopped_reason:
        stopped = redact(render(report.stopped_reason, terms))
        lines.append(f"stopped: {shown_text(stopped, NOTE_CHARS)}")
    rejects = report.files.get("rejects")
    if rejects and (report.rejected_local or report.rejected_api):
        command = _fix_command(report, rejects, fix_options)
        lines.append(f"rejects:   {rejects}  (fix them, then: {command})")
    if report.files.get("accepted"):
        lines.append(f"accepted:  {report.files['accepted']}")
    uncertain = report.files.get("uncertain")
    if uncertain and report.uncertain and report.settled_undecided:
        lines.append(
            f"uncertain: {uncertain}  (settle cannot tell: check the pets of "
            "petsync_candidate_ids by hand)"
        )
    elif uncertain and report.uncertain:
        lines.append(
            f"uncertain: {uncertain}  (ask the API which exist: petsync import {report.source} "
            "--settle)"
        )
    if report.pending and not report.dry_run:
        lines.append("pending rows were not sent: re-run the same command to resume")
    return lines


SHOWN_GROUPS = 5  # rows left uncertain by settle, per content, shown in the summary
SHOWN_IDS = 10


def _settle_candidates(report: ImportReport) -> list[str]:
    """The rows settle left uncertain and the pets that may be theirs (all in uncertain.csv)."""
    lines = []
    for rows, ids in report.settled_candidates[:SHOWN_GROUPS]:
        shown = ", ".join(str(i) for i in ids[:SHOWN_IDS])
        more = f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else ""
        which = f"candidate pet ids {shown}{more}" if ids else "no candidates listed"
        lines.append(f"  row{'s' if len(rows) > 1 else ''} {_rows(rows)}: {which}")
    hidden = len(report.settled_candidates) - SHOWN_GROUPS
    if hidden > 0:
        lines.append(f"  and {hidden} more contents: see the uncertain file")
    return lines


def _rows(rows: tuple[int, ...]) -> str:
    shown = ", ".join(str(r) for r in rows[:SHOWN_IDS])
    return shown + (f" and {len(rows) - SHOWN_IDS} more" if len(rows) > SHOWN_IDS else "")


def _fix_command(report: ImportReport, rejects: str, fix_options: Sequence[str] = ()) -> str:
    """The command that imports the fixed reject file where the first file's journals are
    (its ``--out-dir``, when the reject file is elsewhere: archived), so each row is still
    created at most once, with the options of this run it needs (``fix_options``)."""
    command = " ".join(["petsync import", rejects, *fix_options])
    journal = Path(report.files.get("journal", ""))
    if journal.parent.name == "journals" and journal.parent.parent.name == ".petsync":
        out_dir = journal.parent.parent.parent
        if out_dir != Path(rejects).parent:
            command += f" --out-dir {out_dir}"
    return command


def import_total_line(batch: BatchReport) -> str:
    """One line over every file of a run that imported several."""
    total = batch.metric_counts()
    files = len(batch.reports) + len(batch.failures)
    return (
        f"{files} files ({len(batch.failures)} not imported): created "
        f"{total.get('rows_created', 0)}, rejected {total.get('rows_rejected', 0)}, uncertain "
        f"{total.get('rows_uncertain', 0)}, pending {batch.pending}; exit {batch.exit_code}"
    )


def diff_lines(result: SnapshotDiff, *, details: bool) -> list[str]:
    """The changes between two snapshots: counts, then with ``details`` the changed pets."""
    lines = [
        f"from {_shown_side(result.old)} to {_shown_side(result.new)}",
        f"added:         {result.added}",
        f"removed:       {result.removed}",
        f"renamed:       {result.renamed}",
        f"recategorised: {result.recategorised}",
    ]
    transitions = result.status_transitions
    lines.append(f"status changes: {sum(transitions.values())}")
    for (before, after), count in transitions.items():
        lines.append(f"  {_shown_status(before)} -> {_shown_status(after)}: {count}")
    if result.fields_appeared or result.fields_disappeared:
        lines.append(f"fields appeared:    {', '.join(result.fields_appeared) or '-'}")
        lines.append(f"fields disappeared: {', '.join(result.fields_disappeared) or '-'}")
    changes = result.field_changes
    if changes:
        lines.append(f"field changes: {sum(changes.values())}")
        lines.extend(f"  {name}: {count}" for name, count in changes.items())
    if details:
        for title, frame in (
            ("added", result.added_rows),
            ("removed", result.removed_rows),
            ("renamed", result.renamed_rows),
            ("recategorised", result.recategorised_rows),
            ("status changes", result.transition_rows),
            ("field changes", result.field_change_rows),
        ):
            if frame is not None and len(frame):
                lines.append(f"\n{title}:")
                lines.append(frame.to_string(index=False))
    return lines


def _shown_side(info: SnapshotInfo) -> str:
    """A side of a diff: its date and path, and a flag when it is not to be trusted."""
    kinds = [k for k, on in (("incomplete", not info.complete), ("drop", info.drop_flagged)) if on]
    flagged = f", flagged: {' and '.join(kinds)}" if kinds else ""
    return f"{info.date} ({info.path}{flagged})"


def _shown_status(status: str | None) -> str:
    return NO_STATUS_SHOWN if status is None else status


def _counted_rows(count: int) -> str:
    """``1 row``, ``2 rows``: a summary a person reads says one row, not 1 rows."""
    return f"{count} row" if count == 1 else f"{count} rows"
