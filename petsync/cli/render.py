"""How reports read on a terminal, and as the one JSON document of ``--json``.

Functions here return lines (or a document) and print nothing, so each command echoes them
and a test can compare them whole. The export summary serves ``export`` and ``demo`` alike.
A JSON document holds the same facts as the lines, never the key.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from petsync.core.apikey import ENV_API_KEY, redact
from petsync.core.text import shown_text

NOTE_CHARS = 1_000  # of a note or reason built from what a server sent

if TYPE_CHECKING:
    from petsync.client.client import CheckReport
    from petsync.export.diff import SnapshotDiff
    from petsync.export.report import ExportReport
    from petsync.importer.batch import BatchReport
    from petsync.importer.report import ImportReport
    from petsync.ops.limits import ClientLimits
    from petsync.ops.settings import Target


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


def export_document(report: ExportReport) -> dict[str, Any]:
    """What ``petsync export --json`` prints: where the snapshot went, its manifest, what was
    pruned, the warnings and the exit code."""
    return {
        "snapshot_path": None if report.snapshot_path is None else str(report.snapshot_path),
        **report.manifest,
        "pruned": [str(path) for path in report.pruned],
        "warnings": [redact(warning) for warning in report.warnings],
        "notices": report.notices,
        "exit_code": int(report.exit_code),
    }


def export_summary(report: ExportReport) -> list[str]:
    """The human summary of an export (also the demo's)."""
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
    lines.extend(f"warning: {notice}" for notice in report.notices)
    return lines


def import_summary(report: ImportReport) -> list[str]:
    """The human summary of an import, ending with the command that fixes what is left."""
    read = f"read {report.source}: {report.rows_read} rows, {report.skipped_blank} blank skipped"
    if report.sheet is not None:
        read += f", sheet {report.sheet!r}"
    else:
        read += f", encoding {report.encoding}, delimiter {report.delimiter}"
    lines = [read]
    if report.encoding_notice:
        lines.append(f"  note: {report.encoding_notice}")
    lines.extend(f"  note: {notice}" for notice in report.notices)
    if report.dry_run:
        lines.append(
            f"dry run: {report.would_send} rows would be sent, nothing sent; rejected locally "
            f"{report.rejected_local}"
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
    if report.normalisations:
        done = ", ".join(f"{name} {count}" for name, count in report.normalisations.items())
        lines.append(f"normalised: {done}")
    lines.append(f"took {report.elapsed_seconds:.1f} s, {report.rows_per_second:.0f} rows/s")
    if report.stopped_reason:
        lines.append(f"stopped: {shown_text(redact(report.stopped_reason), NOTE_CHARS)}")
    rejects = report.files.get("rejects")
    if rejects and (report.rejected_local or report.rejected_api):
        lines.append(f"rejects:   {rejects}  (fix them, then: petsync import {rejects})")
    if report.files.get("accepted"):
        lines.append(f"accepted:  {report.files['accepted']}")
    uncertain = report.files.get("uncertain")
    if uncertain and report.uncertain:
        lines.append(
            f"uncertain: {uncertain}  (ask the API which exist: petsync import {report.source} "
            "--settle)"
        )
    if report.pending and not report.dry_run:
        lines.append("pending rows were not sent: re-run the same command to resume")
    return lines


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
        f"from {result.old.date} ({result.old.path}) to {result.new.date} ({result.new.path})",
        f"added:         {result.added}",
        f"removed:       {result.removed}",
        f"renamed:       {result.renamed}",
        f"recategorised: {result.recategorised}",
    ]
    transitions = result.status_transitions
    lines.append(f"status changes: {sum(transitions.values())}")
    for (before, after), count in transitions.items():
        lines.append(f"  {before} -> {after}: {count}")
    if details:
        for title, frame in (
            ("added", result.added_rows),
            ("removed", result.removed_rows),
            ("renamed", result.renamed_rows),
            ("recategorised", result.recategorised_rows),
            ("status changes", result.transition_rows),
        ):
            if len(frame):
                lines.append(f"\n{title}:")
                lines.append(frame.to_string(index=False))
    return lines


def target_lines(target: Target) -> list[str]:
    """Each resolved setting, its value and where it came from; the key shows as hidden."""
    return [
        redact(f"{label:<14}{text}  [{source}]", [target.api_key])
        for _, label, text, _, source in _target_rows(target)
    ]


def target_document(target: Target) -> dict[str, Any]:
    """What ``petsync config show --json`` prints: each setting's value and source.

    The key's value is ``"***"`` when one was found, else null; never the key.
    """
    return {
        name: {"value": value, "source": redact(source, [target.api_key])}
        for name, _, _, value, source in _target_rows(target)
    }


def _target_rows(target: Target) -> list[tuple[str, str, str, object, str]]:
    """(JSON name, label, text, JSON value, source) of each setting ``config show`` shows."""
    from petsync.ops.settings import env_key_variable

    key_help = (
        f"not set: set {env_key_variable(target.env_name)} or {ENV_API_KEY}, "
        "or pass --api-key-file PATH"
    )
    config_file = str(target.config_file) if target.config_file else None
    return [
        ("environment", "environment", target.env_name, target.env_name, target.env_source),
        (
            "config_file",
            "config file",
            config_file or "none",
            config_file,
            target.config_file_source or "no petsync.toml found",
        ),
        ("base_url", "base URL", target.base_url, target.base_url, target.base_url_source),
        (
            "api_key",
            "API key",
            "*** (hidden)" if target.api_key else key_help,
            "***" if target.api_key else None,
            target.api_key_source or "nowhere",
        ),
        (
            "allow_insecure_http",
            "insecure http",
            "allowed" if target.allow_insecure_http else "refused to non-loopback hosts",
            target.allow_insecure_http,
            target.allow_insecure_http_source,
        ),
        *_limit_rows(target.limits),
    ]


def _limit_rows(limits: ClientLimits) -> list[tuple[str, str, str, object, str]]:
    from petsync.ops.limits import format_size

    rows: list[tuple[str, str, str, object]] = [
        ("timeout", "timeout", f"{limits.timeout:g} s a request", limits.timeout),
        ("retries", "retries", str(limits.retries), limits.retries),
        ("retry_budget", "retry budget", f"{limits.retry_budget:g} s", limits.retry_budget),
        (
            "max_response_size",
            "max response",
            format_size(limits.max_response_size),
            limits.max_response_size,
        ),
    ]
    return [(name, label, text, value, limits.source(name)) for name, label, text, value in rows]
