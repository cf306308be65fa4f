"""Reading a settings file (``petsync.toml``, a job file) as TOML, within bounds."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from petsync.core.errors import ConfigError
from petsync.core.interface import SETTINGS_FILE_LIMIT
from petsync.core.reading import read_regular


def read_toml(path: Path, what: str) -> dict[str, Any]:
    """A TOML file (``what``: "job file", "config file") parsed, within bounds.

    Over :data:`~petsync.core.interface.SETTINGS_FILE_LIMIT` bytes, not UTF-8, not TOML,
    or nested too deep for the parser (thousands of brackets) is a :class:`ConfigError`
    naming the file, and so is a path that is no regular file (a FIFO, a device: checked
    before a byte is read, see :mod:`petsync.core.reading`) or cannot be read.
    """
    try:
        data = read_regular(path, what, limit=SETTINGS_FILE_LIMIT, error=ConfigError)
    except ConfigError as exc:
        if isinstance(exc.__cause__, OSError):
            raise exc.__cause__ from None  # the caller names an unreadable file its own way
        raise
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{what} {path} is not valid TOML: the byte at offset {exc.start} is not UTF-8; "
            "save it as UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{what} {path} is not valid TOML: {exc}") from exc
    except RecursionError:
        raise ConfigError(
            f"{what} {path} nests arrays or tables too deeply to read (thousands of "
            "brackets); no setting needs that: is it the right file?"
        ) from None
