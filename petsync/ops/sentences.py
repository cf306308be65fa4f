"""What each warning (and error) event says to a person on a terminal.

Library modules log a warning as an event name with fields (the structured form, kept
whole in ``--log-format json``). A person reading the text log gets the sentence below
instead, ``Warning: ...`` in the voice of the commands' own messages: what happened, what
petsync did about it, and what to do. The sentence is built from the event's fields only;
the caller redacts and escapes it.

Every ``logger.warning``/``logger.error`` event of the package has an entry here; a test
finds them in the source and renders each one, so a new warning cannot reach the terminal
as a raw structured line. An event without an entry (a plug-in's) still reads as a sentence:
its name in words, then its fields.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from petsync.core.settings_table import SETTLE
from petsync.core.wording import LIBRARY, Said, Terms, render

Fields = Mapping[str, Any]


def _listed(value: object) -> str:
    """A field shown in a sentence: a list as "a, b and c", anything else as its text."""
    if isinstance(value, list | tuple):
        items = [str(item) for item in value]
        return (
            " and ".join([", ".join(items[:-1]), items[-1]]) if len(items) > 1 else "".join(items)
        )
    return str(value)


def _get(fields: Fields, key: str) -> str:
    return _listed(fields.get(key, "?"))


# A sentence that names a setting names the Setting (petsync.core.settings_table): the
# reader's terms are the handler's.
SENTENCES: dict[str, Callable[[Fields], Said]] = {
    "history.snapshots_dated_ahead": lambda f: (
        f"snapshots dated after today ({_get(f, 'dates')}) were left out of the history: a "
        "machine whose clock ran ahead wrote them. They are folded in when their date comes; "
        "delete them if that date is wrong"
    ),
    "metrics.unwritable": lambda f: (
        f"the metrics file was not written: {_get(f, 'error')}. The run's own result stands"
    ),
    "metrics.unreadable": lambda f: (
        f"the metrics file {_get(f, 'path')} could not be read ({_get(f, 'error')}): its "
        "earlier samples are not carried over; check the file's permissions"
    ),
    "export.lock_taken_over": lambda f: (
        f"took over the lock {_get(f, 'lock')}: its holder ({_get(f, 'expired_holder')}) let "
        "it expire, so that run is taken as dead"
    ),
    "export.lock_kept": lambda f: (
        f"the lock {_get(f, 'lock')} was kept, not released: {_get(f, 'reason')}. It expires "
        f"in {_get(f, 'expires_in')}; delete it by hand sooner only once that step has ended"
    ),
    "export.lock_not_released": lambda f: (
        f"the lock {_get(f, 'lock')} could not be released; it expires by itself, and the "
        "next run takes it over then"
    ),
    "export.marker_not_removed": lambda f: (
        f"the lock marker {_get(f, 'key')} could not be removed; it is harmless, and may be "
        "deleted by hand"
    ),
    "export.rolled_back": lambda f: (
        f"rolled back the snapshot of {_get(f, 'snapshot_date')} that a killed run left half "
        f"published (staged at {_get(f, 'staged')}); the snapshot before it is as it was"
    ),
    "export.warning": lambda f: _get(f, "message"),
    "import_glob_link_skipped": lambda f: (
        f"{_get(f, 'path')} is a symbolic link: a glob passes over links (one planted in a "
        "shared inbox would have petsync read the file it points to); name the file itself "
        "to import it"
    ),
    "import_earlier_file_unfinished": lambda f: (
        f"an earlier {_get(f, 'source')} (journal {_get(f, 'journal')}) was not finished: put "
        "that file back and import it (with " + SETTLE.given(True) + ") to finish it"
    ),
    "import_row_echo_differs": lambda f: (
        f"row {_get(f, 'row')}: the API created pet {_get(f, 'id')} but answered with other "
        f"values than were sent ({_get(f, 'differs')}); check that pet"
    ),
    "import_row_uncertain": lambda f: (
        f"row {_get(f, 'row')}: the request was sent but its outcome is unknown (HTTP "
        f"{_get(f, 'http_status')}); it is not sent again: list the pets, then "
        + SETTLE.given(True)
    ),
    "import_grace_expired": lambda f: (
        f"{_get(f, 'workers_still_sending')} senders still waited for an answer when the grace "
        "time ran out; the import stopped without them: re-run the same command to resume"
    ),
    "journal_torn_line_dropped": lambda f: (
        f"the journal {_get(f, 'path')} ended in a line torn by a crash; that line was cut "
        "off and the journal goes on from the line before it"
    ),
    "workbook_cells_not_checked": lambda f: (
        f"the cells of sheet {_get(f, 'sheet')!r} in {_get(f, 'path')} were not checked for "
        f"exact values ({_get(f, 'reason')}); the rows are read as the spreadsheet reader "
        "gives them"
    ),
    "workbook_merged_cells_not_read": lambda f: (
        f"the merged cells of sheet {_get(f, 'sheet')!r} in {_get(f, 'path')} could not be "
        f"read ({_get(f, 'reason')}); the cells they cover read as the file holds them"
    ),
    "orchestration.snapshots_unreadable": lambda f: (
        f"the snapshots under {_get(f, 'out')} could not be read ({_get(f, 'error')}): the "
        f"Dagster partitions begin at start_date {_get(f, 'start_date')}, not at the first "
        "stored night; reload the definitions once the store answers"
    ),
    "error": lambda f: _get(f, "message"),
}


def sentence(event: str, fields: Fields, terms: Terms = LIBRARY) -> str:
    """The sentence a person reads for ``event`` with ``fields``, settings in ``terms``.

    >>> sentence("history.snapshots_dated_ahead", {"dates": ["2026-11-28", "2026-11-29"]})[:58]
    'snapshots dated after today (2026-11-28 and 2026-11-29) we'
    >>> sentence("cache.too_big", {"path": "/tmp/x"})
    'cache too big (path: /tmp/x)'
    """
    said = SENTENCES.get(event)
    if said is not None:
        return render(said(fields), terms)
    words = event.replace(".", " ").replace("_", " ")
    details = ", ".join(f"{key}: {_listed(value)}" for key, value in fields.items())
    return f"{words} ({details})" if details else words
