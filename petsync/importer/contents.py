"""The distinct pet contents of a file, on disk: what the baseline listing looks for.

Taking a baseline (:func:`~petsync.importer.baseline.take_baseline`) asks, for every pet the
API lists, whether the file holds a row of that content. A file of ten million different
rows has ten million contents; they go to an SQLite file in a working folder instead of a
Python set, so the import's memory does not grow with the file.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from petsync.importer.checked_rows import CheckedRow, PetContent
from petsync.importer.row_states import working_db

_NO_STATUS = ""  # no valid status is empty: it stands for "no status" in the table


class ContentSet:
    """A set of :data:`~petsync.importer.checked_rows.PetContent` kept in ``directory``.

    The folder is made afresh (what a killed run left is removed first) and removed by
    :meth:`close`.
    """

    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._db = working_db(
            directory,
            """
            CREATE TABLE contents (name TEXT NOT NULL, category INTEGER NOT NULL,
                                   status TEXT NOT NULL, PRIMARY KEY (name, category, status))
                                   WITHOUT ROWID;
            """,
        )

    def add_all(self, contents: Iterator[PetContent]) -> None:
        self._db.execute("BEGIN")
        try:
            self._db.executemany(
                "INSERT OR IGNORE INTO contents VALUES (?, ?, ?)",
                ((name, category, status or _NO_STATUS) for name, category, status in contents),
            )
        finally:
            self._db.execute("COMMIT")

    def __contains__(self, content: object) -> bool:
        if not isinstance(content, tuple) or len(content) != 3:
            return False
        name, category, status = content
        found = self._db.execute(
            "SELECT 1 FROM contents WHERE name = ? AND category = ? AND status = ?",
            (name, category, status or _NO_STATUS),
        ).fetchone()
        return found is not None

    def __len__(self) -> int:
        (count,) = self._db.execute("SELECT count(*) FROM contents").fetchone()
        return int(count)

    def __iter__(self) -> Iterator[PetContent]:
        for name, category, status in self._db.execute("SELECT * FROM contents"):
            yield (name, category, status or None)

    def close(self) -> None:
        self._db.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> ContentSet:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def file_contents(rows: Iterable[CheckedRow], directory: Path) -> ContentSet:
    """The contents of the valid checked ``rows``, on disk."""
    contents = ContentSet(directory)
    try:
        contents.add_all(row.content for row in rows if row.content is not None)
    except BaseException:
        contents.close()
        raise
    return contents
