"""The quarantine: listed records that break the interface, kept as sent for whoever checks.

A record without an id, with a float id, without a name and so on cannot go into the typed
snapshot table, and dropping it silently would hide a server problem. Each one is written to
the snapshot's ``_quarantine.jsonl`` as one JSON line naming the listing, the reason and the
page's URL (redacted), and counted in the manifest.

Every line is strict JSON, which has no ``NaN`` or ``Infinity``. A record holding such a
number (Python's JSON reader accepts them from a server) is kept as its JSON text instead:
``"record": null, "record_text": "{\"id\": NaN, ...}"``, so strict parsers read every line
and nothing the server sent is lost. A record whose text holds a lone UTF-16 surrogate
(``"\\ud800"``: valid JSON, no UTF-8 file can hold it) is written with JSON's ``\\u``
escapes, as the server sent it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from petsync.client.listing import InvalidRecord
from petsync.core.apikey import ApiKey, redact


def _strict_json(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=repr)
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:  # a lone surrogate: JSON's \ud800 escape carries it
            return json.dumps(value, ensure_ascii=True, allow_nan=False, default=repr)
    return text


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
        lines = [self._line(label, r) + "\n" for r in records]
        with self._lock:
            self._handle.writelines(lines)
            self.count += len(records)

    def _line(self, label: str, invalid: InvalidRecord) -> str:
        entry: dict[str, object] = {
            "listing": label,
            "reason": invalid.reason,
            "url": redact(invalid.url, self._keys),
            "record": invalid.record,
        }
        try:
            return _strict_json(entry)
        except ValueError:  # NaN or Infinity somewhere in the record
            text = json.dumps(invalid.record, ensure_ascii=True, default=repr)
            return _strict_json({**entry, "record": None, "record_text": text})

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
