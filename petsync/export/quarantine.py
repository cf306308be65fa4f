"""The quarantine: listed records that break the interface, kept as sent for whoever checks.

A record without an id, with a float id, without a name and so on cannot go into the typed
snapshot table, and dropping it silently would hide a server problem. Each one is written to
the snapshot's ``_quarantine.jsonl`` as one JSON line naming the listing, the reason and the
page's URL (redacted), and counted in the manifest.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from petsync.client.listing import InvalidRecord
from petsync.core.apikey import ApiKey, redact


class Quarantine:
    """Appends invalid records to a JSON-lines file; listings in several threads share one.

    >>> with Quarantine(staged.file(QUARANTINE_NAME), [key]) as quarantine:  # doctest: +SKIP
    ...     quarantine.add("sold", page.invalid)
    """

    def __init__(self, path: Path, keys: Iterable[ApiKey | None]) -> None:
        self.path = path
        self.count = 0
        self._lock = threading.Lock()
        self._keys = list(keys)
        self._handle = open(path, "w", encoding="utf-8", newline="\n")  # noqa: SIM115

    def add(self, label: str, records: list[InvalidRecord]) -> None:
        """Write ``records`` of the listing ``label``; their URLs pass through redaction."""
        if not records:
            return
        lines = [
            json.dumps(
                {
                    "listing": label,
                    "reason": r.reason,
                    "url": redact(r.url, self._keys),
                    "record": r.record,
                },
                ensure_ascii=False,
                default=repr,
            )
            + "\n"
            for r in records
        ]
        with self._lock:
            self._handle.writelines(lines)
            self.count += len(records)

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> Quarantine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
