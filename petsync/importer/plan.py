"""The plan stage of an import: where its files go, its journal, and what other runs did.

Given the checked input, :func:`plan_import` names the output files (checked writable
before anything is sent), opens the file's journal (which resumes an earlier run of the
same bytes) and loads the ledger: the rows of the same first file that the imports of its
fixes created, or may have (:mod:`petsync.importer.provenance`). A dry run opens no
journal; it reads the journals there are. The send and write stages take the plan.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from petsync.core.errors import ConfigError
from petsync.core.settings_table import OUT_DIR, STATE_DIR
from petsync.core.wording import Said
from petsync.importer.journal import Journal
from petsync.importer.journal_home import journal_folder, journal_home, make_home
from petsync.importer.output_paths import OutputPaths, check_writable
from petsync.importer.precheck import CheckedInput
from petsync.importer.provenance import Ledger, load_ledger, origin_lock, register_fix


@dataclass(frozen=True)
class ImportPlan:
    """Where one import writes, and what is known of its rows before sending.

    ``journal`` is None for a dry run. ``ledger`` holds the rows other files of the same
    origin created or may have; ``notices`` what the plan found worth saying.
    """

    paths: OutputPaths
    journal: Journal | None
    ledger: Ledger | None
    notices: tuple[Said, ...] = field(default=())


@dataclass(frozen=True)
class Destination:
    """What the plan needs of the import's settings: the output folder (None: the input's),
    a journal file that overrides the journals' folder, the journals' home for this API
    (None: the output folder's), and whether anything is to be written at all."""

    out_dir: Path | None
    journal_file: Path | None
    home: Path | None
    dry_run: bool


def plan_import(
    checked: CheckedInput, where: Destination, held: contextlib.ExitStack
) -> ImportPlan:
    """Plan the import of ``checked``: paths, journal, ledger.

    The journal and the lock of the rows' first file are entered into ``held``: they stay
    open and held until it closes. Raises :class:`~petsync.core.errors.UsageError` for an
    output or journal folder that cannot be written, before anything is sent.
    """
    journal_file = where.journal_file
    if journal_file is None:
        output_dir = where.out_dir if where.out_dir is not None else checked.path.parent
        folder = journal_folder(output_dir, where.home, checked.sha256, checked.origin)
        journal_file = folder / f"{checked.sha256}.jsonl"
    paths = OutputPaths.for_input(
        checked.path,
        where.out_dir,
        sha256=checked.sha256,
        journal=journal_file,
        fed_back=checked.petsync_written,
    )
    paths.check_writable()  # the folder, and no link or FIFO at an output's name
    # What the journals say: a row created (or maybe created) by an earlier run of this
    # file, or by a fix since, is neither sent again nor a reject again.
    rows = checked.original_rows if checked.fed_back else None
    journals = paths.journal.parent
    if where.dry_run:
        return ImportPlan(paths, None, load_ledger(journals, checked.origin, None, rows))
    if journals == where.home:
        make_home(journals)
    check_writable(journals, "journal")
    notices: list[Said] = []
    # Every import of the rows of one first file holds the lock of its journal: two fixes
    # of one row must not both send it (see petsync.importer.provenance). The first file's
    # own import holds it as its journal.
    first = journals / f"{checked.origin}.jsonl"
    if checked.fed_back and not _has_content(first):
        notices.append(
            f"the journal of the first file these rows came from is not in {journals} "
            "(its import used another state directory, API or output folder, or it was "
            "moved): if so, import this file with that "
            + STATE_DIR
            + " or "
            + OUT_DIR
            + ", or rows created there could be created again"
        )
    if paths.journal != first:
        held.enter_context(origin_lock(journals, checked.origin))
    journal = Journal.open(
        paths.journal,
        source=checked.path,
        sha256=checked.sha256,
        settings=checked.settings,
        outputs=paths.directory,
    )
    held.callback(journal.close)
    if checked.fed_back:
        register_fix(journals, checked.origin, paths.journal)
    ledger = load_ledger(journals, checked.origin, paths.journal, rows=rows)
    return ImportPlan(paths, journal, ledger, tuple(notices))


def journals_home(configured: Path | None, client: object | None) -> Path | None:
    """The API's journal folder: ``configured``, else (as the command line does) the one
    under ``$XDG_STATE_HOME/petsync`` (``~/.local/state/petsync``) for ``client.base_url``,
    so a library caller importing the same file from two folders creates its rows once.
    None only for a dry run without a client: it reads the output folder's journals."""
    if configured is not None or client is None:
        return configured
    base_url = getattr(client, "base_url", None)  # a wrapper may not pass it on
    if not isinstance(base_url, str) or not base_url:
        raise ConfigError(
            f"the client {type(client).__name__} has no base_url, which names the folder "
            "of the API's import journals: give it one, or pass ImportConfig(journal_home=...)"
            " (nothing was sent)"
        )
    return journal_home(base_url, None, os.environ, Path.home())


def _has_content(path: Path) -> bool:
    try:
        return path.stat().st_size > 0
    except OSError:
        return False
