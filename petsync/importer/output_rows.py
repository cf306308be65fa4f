"""The rows of an import's output files: each input row's outcome, and the cells it writes.

Each file repeats the input's own columns (the ``petsync_*`` ones of a re-imported petsync
file excepted) with the raw cells unchanged, then petsync's columns, named here. A row's
outcome is decided once by :func:`classify`; one function per file shapes its cells
(:func:`local_reject_cells`, :func:`api_reject_cells`, :func:`accepted_cells`,
:func:`uncertain_cells`). Writing them is :mod:`petsync.importer.outputs`' work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from petsync.importer.row_states import RowRecord, RowState
from petsync.importer.validation import ErrorCode, FieldError, visible_controls

# petsync_row and petsync_origin (the sha256 of the first file) are a row's identity
# through every round of fixing (see petsync.importer.provenance).
REJECT_COLUMNS: tuple[str, ...] = (
    "petsync_row",
    "petsync_error_source",
    "petsync_error_code",
    "petsync_error_field",
    "petsync_error_message",
    "petsync_http_status",
    "petsync_origin",
)
# petsync_fixed_in: the fix file whose import created the row (blank: this file's).
ACCEPTED_COLUMNS: tuple[str, ...] = (
    "petsync_row",
    "petsync_id",
    "petsync_origin",
    "petsync_fixed_in",
)
UNCERTAIN_COLUMNS: tuple[str, ...] = (
    "petsync_row",
    "petsync_uncertain_reason",
    "petsync_http_status",
    "petsync_candidate_ids",
    "petsync_origin",
)

# The reason of a row whose last journal line is `sending`: the run died mid-request.
SENDING_REASON = (
    "the run stopped while this row was being sent (crash or kill); the pet may or may not exist"
)


class Outcome(StrEnum):
    """What became of one input row; each value is the name of the report's count."""

    REJECTED_LOCAL = "rejected_local"  # failed validation: the reject file, source "local"
    REJECTED_API = "rejected_api"  # the API answered 4xx: the reject file, source "api"
    CREATED = "created"  # the accepted file, with its new id
    UNCERTAIN = "uncertain"  # the uncertain file: it may or may not exist
    PENDING = "pending"  # valid and not sent (a stop, max_errors): a re-run sends it
    WOULD_SEND = "would_send"  # valid, in a dry run
    DUPLICATE = "duplicates"  # repeats an earlier row of the sheet: not sent, in no file


def classify(
    record: RowRecord | None, *, valid: bool, dry_run: bool, repeat: bool = False
) -> Outcome:
    """A row's outcome from its validity and its last journal line (None: never journaled).

    ``repeat`` says the row repeats an earlier one and repeats are not sent.

    >>> classify(RowRecord(2, RowState.SENDING), valid=True, dry_run=False)
    <Outcome.UNCERTAIN: 'uncertain'>
    """
    if not valid:
        return Outcome.REJECTED_LOCAL
    if record is None and repeat:
        return Outcome.DUPLICATE
    if dry_run and (record is None or record.state in (RowState.REJECTED, RowState.UNSENT)):
        return Outcome.WOULD_SEND  # a dry run knows only what exists or may (the ledger)
    if record is None:
        return Outcome.PENDING
    match record.state:
        case RowState.CREATED:
            return Outcome.CREATED
        case RowState.REJECTED:
            return Outcome.REJECTED_API
        case RowState.UNCERTAIN | RowState.SENDING:
            return Outcome.UNCERTAIN
        case RowState.UNSENT:
            return Outcome.PENDING


@dataclass(frozen=True)
class OutputRow:
    """One input row as the output files need it.

    ``carried`` holds its cells under the input's own columns; ``errors`` why validation
    refused it; ``record`` its last journal line, if any; ``origin`` the sha256 of the
    first file it came from (blank when unknown); ``repeat_of`` the earlier row it repeats
    when repeats are not sent. A ``number`` below 1 (a fed-back row with no identity) is
    written blank.
    """

    number: int
    carried: Sequence[str]
    errors: tuple[FieldError, ...] = ()
    record: RowRecord | None = None
    origin: str = ""
    repeat_of: int | None = None

    @property
    def number_text(self) -> str:
        return str(self.number) if self.number > 0 else ""


def as_sent(
    carried: Sequence[str], positions: Mapping[int, str], pet: tuple[str, int, str | None]
) -> list[str]:
    """``carried`` with the cells at ``positions`` (``{position: field}``) replaced by
    ``pet``, the pet as a fix file sent it: the first file's accepted row shows the pet
    that exists.

    >>> as_sent(["Rx", "1", "note"], {0: "name", 1: "categoryId"}, ("Rex", 1, None))
    ['Rex', '1', 'note']
    """
    cells = list(carried)
    name, category, status = pet
    sent = {"name": name, "categoryId": str(category), "status": status or ""}
    for position, field_name in positions.items():
        cells[position] = sent[field_name]
    return cells


def local_reject_cells(row: OutputRow) -> list[str]:
    """A row validation refused, for the reject file: every error joined in one line."""
    errors = row.errors
    carried = row.carried
    if any(e.code == ErrorCode.CONTROL_CHARACTER for e in errors):
        carried = visible_controls(carried)
    return [
        *carried,
        row.number_text,
        "local",
        ";".join(e.code for e in errors),
        ";".join(e.field for e in errors if e.field),
        "; ".join(e.message for e in errors),
        "",
        row.origin,
    ]


def api_reject_cells(row: OutputRow) -> list[str]:
    """A row the API refused (a final 4xx), for the reject file: with the API's answer."""
    record = _journaled(row)
    return [
        *row.carried,
        row.number_text,
        "api",
        record.code or "",
        record.field or "",
        record.message or "",
        _status(record),
        row.origin,
    ]


def accepted_cells(row: OutputRow) -> list[str]:
    """A created row, for the accepted file: with the id the API gave it."""
    record = _journaled(row)
    return [*row.carried, row.number_text, str(record.id), row.origin, record.via or ""]


def uncertain_cells(row: OutputRow) -> list[str]:
    """A row that may or may not exist, for the uncertain file: with the reason."""
    record = _journaled(row)
    reason = record.message or SENDING_REASON
    candidates = " ".join(str(i) for i in record.candidates or ())
    if record.via is not None:
        # The uncertain file is read by whoever runs the import: the setting is described,
        # not named in one caller's terms.
        reason += f" (sent from {record.via}: settling an import of {record.via} decides it)"
    return [*row.carried, row.number_text, reason, _status(record), candidates, row.origin]


def _journaled(row: OutputRow) -> RowRecord:
    # classify() gives these outcomes only to rows with a journal line.
    assert row.record is not None
    return row.record


def _status(record: RowRecord) -> str:
    return "" if record.http_status is None else str(record.http_status)
