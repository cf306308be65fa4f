"""The config file, ``petsync.toml``: where it is found, and its ``[environments.NAME]`` tables.

The first file found is the only one read: the one named by the config setting (or
``PETSYNC_CONFIG``), else ``./petsync.toml``, else ``$XDG_CONFIG_HOME/petsync/petsync.toml``
(``~/.config/petsync/petsync.toml``). Every key it does not allow is named with its file and
table; a key that would hold a secret is refused with the way out (:func:`secret_key_message`).
How the settings resolve from it is :mod:`petsync.ops.settings`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from petsync.core.apikey import ENV_API_KEY
from petsync.core.errors import ConfigError
from petsync.core.settings_table import CONFIG
from petsync.core.wording import LIBRARY, Mention, Terms
from petsync.ops.limits import LIMIT_KEYS, check_limit
from petsync.ops.toml_file import read_toml

ENV_CONFIG = "PETSYNC_CONFIG"  # names the config file
CONFIG_FILE_NAME = "petsync.toml"
_STRING_KEYS: tuple[str, ...] = ("base_url", "api_key_env", "api_key_file", "extra_fields")
# Paths an environment may set for the import: its journals' state folder, its category map.
_PATH_KEYS: tuple[str, ...] = ("state_dir", "category_map")
ENVIRONMENT_KEYS: tuple[str, ...] = _STRING_KEYS + _PATH_KEYS + LIMIT_KEYS

# An environment's name: letters, digits, "-" and "_", starting with a letter or digit.
ENV_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
# Key names that would put a secret into a config or job file; refused with the way out.
_SECRET_KEY = re.compile(r"(?i)^(api[_-]?key|key|token|api[_-]?token|bearer|secret|password)$")


@dataclass(frozen=True)
class Environment:
    """One ``[environments.NAME]`` table of a config file."""

    name: str
    base_url: str | None = None
    api_key_env: str | None = None
    api_key_file: Path | None = None
    limits: Mapping[str, float | int] = field(default_factory=dict)  # by LIMIT_KEYS name
    extra_fields: str | None = None  # the export's --extra-fields for this environment
    paths: Mapping[str, Path] = field(default_factory=dict)  # by _PATH_KEYS name


@dataclass(frozen=True)
class ConfigFile:
    """A parsed ``petsync.toml``: its path, how it was found, and its environments."""

    path: Path
    source: str
    environments: Mapping[str, Environment] = field(default_factory=dict)


def secret_key_message(where: str, key: str) -> str | None:
    """The refusal for a config or job file key that would hold a key value, else None."""
    if not _SECRET_KEY.match(key):
        return None
    return (
        f"{where}: {key!r} would put an API key in a file others read, copy and commit; "
        f"set the key in the environment ({ENV_API_KEY} or PETSYNC_<ENV>_API_KEY, e.g. from "
        "the env file cron loads) or point api_key_file at a file with mode 600"
    )


def user_config_path(environ: Mapping[str, str], home: Path) -> Path:
    """``$XDG_CONFIG_HOME/petsync/petsync.toml``, or ``~/.config/petsync/petsync.toml``."""
    xdg = environ.get("XDG_CONFIG_HOME", "")
    # The XDG spec says a relative value is invalid and must be ignored.
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config"
    return base / "petsync" / CONFIG_FILE_NAME


def find_config_file(
    *,
    config_path: Path | None,
    cwd: Path,
    home: Path,
    environ: Mapping[str, str],
    terms: Terms = LIBRARY,
) -> ConfigFile | None:
    """Find and parse the one config file in use, or None when there is none.

    A ``config_path`` given is said to come from the config setting in ``terms``.
    """
    named, source = config_path, Mention(CONFIG).render(terms)
    if named is None and environ.get(ENV_CONFIG, "").strip():
        named, source = Path(environ[ENV_CONFIG].strip()), ENV_CONFIG
    if named is not None:
        path = named if named.is_absolute() else cwd / named
        if not path.exists():  # anything else there is named by load_config_file
            raise ConfigError(f"config file {path} (from {source}) does not exist")
        return load_config_file(path, source=source, home=home)
    local = cwd / CONFIG_FILE_NAME
    if local.exists():  # a FIFO or directory there is refused, naming it, not skipped
        return load_config_file(local, source="working directory", home=home)
    user = user_config_path(environ, home)
    if user.exists():
        return load_config_file(user, source="user config directory", home=home)
    return None


def load_config_file(path: Path, *, source: str, home: Path) -> ConfigFile:
    """Parse a config file, naming the file and key of anything it does not allow."""
    try:
        data = read_toml(path, "config file")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
    for key in data:
        if key != "environments":
            raise ConfigError(
                secret_key_message(f"config file {path}", key)
                or f"config file {path}: unknown key {key!r}; allowed: environments"
            )
    tables = data.get("environments", {})
    if not isinstance(tables, dict):
        raise ConfigError(
            f"config file {path}: 'environments' must be tables like [environments.production]"
        )
    environments: dict[str, Environment] = {}
    for name, table in tables.items():
        environments[name] = _parse_environment(path, name, table, home)
    return ConfigFile(path=path, source=source, environments=environments)


def _parse_environment(path: Path, name: str, table: object, home: Path) -> Environment:
    where = f"config file {path} [environments.{name}]"
    if not ENV_NAME.match(name):
        raise ConfigError(f"{where}: an environment name uses letters, digits, '-' and '_'")
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table with keys: {', '.join(ENVIRONMENT_KEYS)}")
    values: dict[str, str] = {}
    limits: dict[str, float | int] = {}
    for key, value in table.items():
        if key not in ENVIRONMENT_KEYS:
            raise ConfigError(
                secret_key_message(where, key)
                or f"{where}: unknown key {key!r}; allowed: {', '.join(ENVIRONMENT_KEYS)}"
            )
        if key in LIMIT_KEYS:
            limits[key] = check_limit(where, key, value)
            continue
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: {key} must be a non-empty string, got {value!r}")
        values[key] = value.strip()
    if "api_key_env" in values and "api_key_file" in values:
        raise ConfigError(f"{where}: set api_key_env or api_key_file, not both")
    key_file = (
        _config_path(values["api_key_file"], path, home) if "api_key_file" in values else None
    )
    paths = {key: _config_path(values[key], path, home) for key in _PATH_KEYS if key in values}
    return Environment(
        name=name,
        base_url=values.get("base_url"),
        api_key_env=values.get("api_key_env"),
        api_key_file=key_file,
        limits=limits,
        extra_fields=values.get("extra_fields"),
        paths=paths,
    )


def _config_path(raw: str, path: Path, home: Path) -> Path:
    """A path in a config file: ``~/`` is the home, a relative one the file's folder."""
    found = home / raw[2:] if raw.startswith("~/") else Path(raw)
    return found if found.is_absolute() else path.parent / found
