"""Log output for people (``text``) and for log shippers (``json``), always redacted.

Library modules log through ``logging.getLogger(__name__)`` with a short event name as the
message and data in ``extra={"fields": {...}}``. :func:`configure_logging` attaches one handler
to the ``petsync`` logger, writing to stderr so stdout stays the command's own output::

    json: {"time": "2026-11-22T02:30:00.123Z", "level": "info", "logger": "petsync.export.run",
           "event": "export.done", "fields": {"pets": 250}}
    text: 2026-11-22T02:30:00.123Z INFO petsync.export.run export.done pets=250
          Warning: snapshots dated after today (2026-11-28) were left out of the history: ...

In the text form a warning or an error reads as a sentence (:mod:`petsync.ops.sentences`),
``Warning: ...``, in the voice of the commands' own messages; the structured form of the same
event (name and fields) is the JSON log's.

An event logged with ``extra={"outcome": True}`` is a job's outcome that its command prints
itself (an export's warnings, as ``Warning:`` lines): a text log for a person leaves it out
(``outcomes=False``), so each message shows once; a JSON log keeps it, its only copy there.

The event, every field value (and key) and any traceback pass through
:func:`petsync.core.apikey.redact` with the keys the handle knows, before they are
serialised: a key with a quote in it would otherwise hide behind JSON's escaping, and the
finished line is never searched again, so JSON stays JSON. Each JSON line is one valid
object: values JSON cannot hold (NaN, infinities, other objects) are written as strings.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import sys
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Literal, TextIO

from petsync.core.apikey import ApiKey, redact
from petsync.core.text import shown_text
from petsync.core.wording import LIBRARY, Terms, Words
from petsync.ops.sentences import sentence

LogFormat = Literal["text", "json"]
LOG_FORMATS: tuple[str, ...] = ("text", "json")
LOG_LEVELS: tuple[str, ...] = ("debug", "info", "warning", "error")
DEFAULT_LOG_LEVEL = "warning"
LOGGER_NAME = "petsync"


class _Keys:
    """The keys a handler redacts; the command adds the key once it has resolved it."""

    def __init__(self, keys: Iterable[ApiKey | None]) -> None:
        self.keys: list[ApiKey] = [key for key in keys if key is not None]

    def redact(self, value: object) -> object:
        """Redact strings inside a field value, keeping its JSON shape (strict JSON only)."""
        if isinstance(value, str):
            return redact(value, self.keys)
        if isinstance(value, dict):
            return {redact(str(k), self.keys): self.redact(v) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self.redact(v) for v in value]
        if isinstance(value, float) and not math.isfinite(value):
            return repr(value)  # 'nan', 'inf': JSON has no such numbers
        if value is None or isinstance(value, bool | int | float):
            return value
        return redact(str(value), self.keys)

    def text(self, value: str) -> str:
        return redact(value, self.keys)


def _time(record: logging.LogRecord) -> str:
    stamp = datetime.fromtimestamp(record.created, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


class _Reader:
    """Whose terms a handler's lines name settings in; ``petsync run`` switches it to a job
    file's while the job runs (:meth:`LogHandle.terms_of`)."""

    def __init__(self, terms: Terms) -> None:
        self.terms = terms


def _fields(record: logging.LogRecord, terms: Terms) -> dict[str, object]:
    """The record's fields; each message naming settings (:class:`Words`) put in ``terms``."""
    fields = getattr(record, "fields", None)
    if not isinstance(fields, dict):
        return {}
    return {key: _in_terms(value, terms) for key, value in fields.items()}


def _in_terms(value: object, terms: Terms) -> object:
    """``value`` with every message in it, however deep (a report's notices), in ``terms``."""
    if isinstance(value, Words):
        return value.render(terms)
    if isinstance(value, list):
        return [_in_terms(item, terms) for item in value]
    if isinstance(value, tuple):
        return tuple(_in_terms(item, terms) for item in value)
    if isinstance(value, dict):
        return {key: _in_terms(item, terms) for key, item in value.items()}
    return value


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, event, fields (and exc when raised)."""

    def __init__(self, keys: _Keys, reader: _Reader | None = None) -> None:
        super().__init__()
        self._keys = keys
        self._reader = reader or _Reader(LIBRARY)

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": _time(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": self._keys.text(record.getMessage()),
            "fields": self._keys.redact(_fields(record, self._reader.terms)),
        }
        if record.exc_info:
            entry["exc"] = self._keys.text(self.formatException(record.exc_info))
        return json.dumps(entry, ensure_ascii=False, allow_nan=False, sort_keys=False)


class TextFormatter(logging.Formatter):
    """``TIME LEVEL logger event key=value ...`` on one line (tracebacks follow on their own)."""

    def __init__(self, keys: _Keys, reader: _Reader | None = None) -> None:
        super().__init__()
        self._keys = keys
        self._reader = reader or _Reader(LIBRARY)

    def format(self, record: logging.LogRecord) -> str:
        fields = self._keys.redact(_fields(record, self._reader.terms))
        assert isinstance(fields, dict)
        if record.levelno >= logging.WARNING:
            return self._sentence(record, fields)
        pairs = " ".join(f"{key}={_text_value(value)}" for key, value in fields.items())
        event = _escaped(self._keys.text(record.getMessage()))
        line = f"{_time(record)} {record.levelname} {record.name} {event}"
        if pairs:
            line = f"{line} {pairs}"
        if record.exc_info:
            line = f"{line}\n{self._keys.text(self.formatException(record.exc_info))}"
        return line

    def _sentence(self, record: logging.LogRecord, fields: dict[str, object]) -> str:
        """``Warning: ...`` (``Error: ...``): the event as a person reads it, redacted."""
        said = sentence(record.getMessage(), fields, self._reader.terms)
        label = "Warning" if record.levelno < logging.ERROR else "Error"
        line = _escaped(self._keys.text(f"{label}: {said}"))
        if record.exc_info:
            line = f"{line}\n{self._keys.text(self.formatException(record.exc_info))}"
        return line


def _text_value(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    # Quote values with spaces so `key=value` pairs stay splittable.
    return json.dumps(text) if (not text or any(c.isspace() for c in text)) else _escaped(text)


def _escaped(text: str) -> str:
    """Control characters escaped (a server's text can hold terminal escapes), never cut."""
    return shown_text(text, sys.maxsize)


def _not_an_outcome(record: logging.LogRecord) -> bool:
    return getattr(record, "outcome", False) is not True


def json_event_line(logger: str, level: str, event: str, fields: dict[str, object]) -> str:
    """One line of the JSON log, for text written outside logging (a signal handler's).

    >>> json.loads(json_event_line("petsync.cli", "warning", "signal", {"n": 15}))["fields"]
    {'n': 15}
    """
    record = logging.LogRecord(
        logger, logging.getLevelName(level.upper()), "", 0, event, None, None
    )
    record.fields = fields
    return JsonFormatter(_Keys(())).format(record)


class _LastResort(logging.Handler):
    """Python's last resort, in sentences: when nothing shows the ``petsync`` loggers'
    records (a script or notebook that set up no logging, no command's handler), a warning
    reaches stderr as ``Warning: ...``; Python's own would print the bare event name."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.setFormatter(TextFormatter(_Keys(())))

    def emit(self, record: logging.LogRecord) -> None:
        if _shown_elsewhere():
            return
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # a logging handler never raises into the caller
            self.handleError(record)


def _shown_elsewhere() -> bool:
    """Whether a handler besides the last resort sees the ``petsync`` loggers' records."""
    logger: logging.Logger | None = logging.getLogger(LOGGER_NAME)
    while logger is not None:
        if any(not isinstance(h, _LastResort) for h in logger.handlers):
            return True
        logger = logger.parent if logger.propagate else None
    return False


logging.getLogger(LOGGER_NAME).addHandler(_LastResort())


class LogHandle:
    """The handler one command installed; :meth:`close` puts the logger back as it was."""

    def __init__(
        self, handler: logging.Handler, keys: _Keys, previous_level: int, reader: _Reader
    ) -> None:
        self.handler = handler
        self._keys = keys
        self._previous_level = previous_level
        self._reader = reader

    @contextlib.contextmanager
    def terms_of(self, terms: Terms) -> Iterator[None]:
        """Lines logged inside name settings in ``terms`` (a job file's, under ``run``)."""
        previous, self._reader.terms = self._reader.terms, terms
        try:
            yield
        finally:
            self._reader.terms = previous

    def redact(self, text: str) -> str:
        """``text`` redacted with every key this handle knows."""
        return self._keys.text(text)

    def add_key(self, key: ApiKey | None) -> None:
        """Redact this key too (called once the command has resolved its key)."""
        if key is not None and key not in self._keys.keys:
            self._keys.keys.append(key)

    def close(self) -> None:
        logger = logging.getLogger(LOGGER_NAME)
        logger.removeHandler(self.handler)
        logger.setLevel(self._previous_level)
        self.handler.close()


def configure_logging(
    log_format: LogFormat,
    *,
    stream: TextIO,
    level: str = DEFAULT_LOG_LEVEL,
    keys: Iterable[ApiKey | None] = (),
    outcomes: bool = True,
    terms: Terms = LIBRARY,
) -> LogHandle:
    """Send the ``petsync`` loggers' records to ``stream`` in ``log_format``, redacted.

    ``outcomes=False`` leaves out the events marked ``outcome`` (a command shows those
    itself). A warning that names a setting names it in ``terms``: the library's keyword
    unless the command line says it is the reader (:mod:`petsync.core.wording`). The caller
    closes the returned handle when the command ends, so tests and embedding programs get
    the logger back untouched.
    """
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r}; use one of: text, json")
    known, reader = _Keys(keys), _Reader(terms)
    handler = logging.StreamHandler(stream)
    formatter = (
        JsonFormatter(known, reader) if log_format == "json" else TextFormatter(known, reader)
    )
    handler.setFormatter(formatter)
    if not outcomes:
        handler.addFilter(_not_an_outcome)
    logger = logging.getLogger(LOGGER_NAME)
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    return LogHandle(handler, known, previous, reader)


def keys_from_environ(environ: Mapping[str, str]) -> list[ApiKey]:
    """Every ``PETSYNC_*API_KEY`` value in the environment: redacted before a key is resolved."""
    found: list[ApiKey] = []
    for name, value in environ.items():
        if name.startswith("PETSYNC_") and name.endswith("API_KEY") and value.strip():
            found.append(ApiKey(value))
    return found
