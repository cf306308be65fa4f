"""The API key, kept in one object that never prints itself, and the one redaction function.

Everything bound for logs, errors, reports or files passes through :func:`redact`, before it
is serialised (a key with a quote in it would otherwise hide behind JSON's escaping).

The rule: a known key is replaced by ``***`` wherever it stands as a whole word, that is
where it is not run together with letters, digits or ``_`` on a side where the key itself
begins or ends with one. Real keys are long and random, so they are found wherever they
are; a short test key (``PETSYNC_API_KEY=x``) hides only the word ``x``, never the ``x`` of
``exit_code``. A key right after a percent-escape (``Bearer%20KEY``) counts as a whole word.
Keys are not refused for being short: the interface says nothing of their form, and the
reference server's own examples use short ones.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from petsync.core.errors import ConfigError
from petsync.core.interface import KEY_FILE_LIMIT
from petsync.core.reading import open_regular

REDACTED = "***"
# The environment variable every petsync command (and `petsync serve`) reads a key from.
ENV_API_KEY = "PETSYNC_API_KEY"

# A bearer token in any header dump, and key-looking query parameters in URLs.
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s,;\"']+")
_WORD = re.compile(r"\w")  # letters, digits and "_", in any script
_KEY_PARAM = re.compile(r"(?i)((?:api[_-]?key|token|access_token)=)[^&\s#\"']+")


class ApiKey:
    """A bearer API key whose ``repr`` and ``str`` are redacted.

    >>> key = ApiKey("s3cret")
    >>> key
    ApiKey('***')
    >>> key.reveal()
    's3cret'

    Only :class:`petsync.client.auth.BearerAuth` calls :meth:`reveal`. Surrounding
    whitespace (a key file's final newline) is dropped. A key that cannot be sent as a header
    value (a line break inside it, another control character, a non-ASCII character) is
    refused here, when it is loaded, with a :class:`ConfigError` naming ``source`` (where the
    key came from, e.g. ``"API key file /etc/petsync/key"``) and never the key. ``source``
    stays on the key, so every later message about it (a refused key) names where it was
    read, not where it might have been; None when the caller did not say.
    """

    __slots__ = ("_value", "source")

    def __init__(self, value: str, *, source: str | None = None) -> None:
        self.source = source
        value = value.strip()
        if not value:
            raise ValueError("an API key cannot be empty")
        problem = _unsendable(value)
        if problem is not None:
            raise ConfigError(
                f"{source or 'the API key'} holds {problem}: an API key is sent as an HTTP "
                "header, which can carry only one line of printable ASCII. Keep just the key, "
                "on one line"
            )
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"ApiKey({REDACTED!r})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ApiKey) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("ApiKey", self._value))

    def __reduce__(self) -> str | tuple[object, ...]:  # no pickling a key into a file by accident
        raise TypeError("ApiKey cannot be pickled")


def _unsendable(value: str) -> str | None:
    """What in ``value`` cannot go into a header value, described without showing it."""
    if value.isascii() and value.isprintable():
        return None
    for char in value:
        if char in "\r\n":
            return "a line break inside the key"
        if not char.isascii():
            return "a character that is not ASCII"
        if not char.isprintable():
            return f"a control character (U+{ord(char):04X})"
    return None  # pragma: no cover - isprintable() said otherwise


def redact(text: str, keys: Iterable[ApiKey | None] = ()) -> str:
    """Remove every known key value, bearer token and key-like query parameter from text.

    >>> redact("exit_code=1 key=x", [ApiKey("x")])
    'exit_code=1 key=***'
    """
    for key in keys:
        if key is not None:
            text = _whole_word(key.reveal()).sub(REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    return _KEY_PARAM.sub(lambda m: m.group(1) + REDACTED, text)


@functools.lru_cache(maxsize=8)  # called for every URL shown: a listing page's, say
def _whole_word(value: str) -> re.Pattern[str]:
    """The pattern of ``value`` as a whole word (see the module's docstring)."""
    before = r"(?:(?<!\w)|(?<=%[0-9A-Fa-f]{2}))" if _WORD.match(value[0]) else ""
    after = r"(?!\w)" if _WORD.match(value[-1]) else ""
    return re.compile(before + re.escape(value) + after)


def read_key_file(path: Path) -> ApiKey:
    """Read a key file, refusing one that group or others can read, or that holds more than a key.

    The file is checked before a byte is read (:mod:`petsync.core.reading`): only a regular
    file of at most :data:`~petsync.core.interface.KEY_FILE_LIMIT` bytes, whose mode lets
    only its owner read it. Messages name the file, never its content.
    """
    what = "API key file"
    with open_regular(path, what, limit=KEY_FILE_LIMIT, error=ConfigError) as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(
                f"{what} {path} is readable by group or others "
                f"(mode {stat.S_IMODE(mode):o}); fix it with: chmod 600 {path}"
            )
        data = handle.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{what} {path} is not UTF-8 text; keep just the key in it") from None
    if not text.strip():
        raise ConfigError(f"{what} {path} is empty")
    return ApiKey(text, source=f"{what} {path}")
