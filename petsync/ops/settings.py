"""Where the environment, the base URL and the API key come from.

Resolution, first found wins; every resolved value records its source (``petsync config
show`` prints them)::

    environment   --env NAME (or a job file's env), else PETSYNC_ENV, else "production"
    config file   --config PATH (or a job file's config), else PETSYNC_CONFIG, else
                  ./petsync.toml in the working directory, else
                  $XDG_CONFIG_HOME/petsync/petsync.toml (~/.config/petsync/petsync.toml);
                  the first file found is the only one read
    base URL      --base-url, else PETSYNC_BASE_URL, else base_url of [environments.NAME]
    API key       --api-key-file, else the environment's variable (api_key_env, by default
                  PETSYNC_<NAME>_API_KEY), else the environment's api_key_file, else
                  PETSYNC_API_KEY (only when the environment names no key file, so a
                  generic key never reaches an environment that names its own)
    insecure http --allow-insecure-http, else refused for non-loopback hosts
    limits        --timeout, --retries, --retry-budget, --max-response-size (or a job file's
                  keys of those names), else the environment's keys of those names, else
                  the client's defaults (:mod:`petsync.ops.limits`)
    extra fields  --extra-fields (or a job file's extra_fields), else the environment's
                  extra_fields, else drop (the export checks the choice, naming its source)

The key never comes from a command-line value (it would show in ``ps`` and shell history) nor
from a config or job file; a key file that group or others can read is refused with the
``chmod 600`` that fixes it. A config file looks like::

    [environments.production]
    base_url = "https://petstore.example.com/v1"

    [environments.staging]
    base_url = "https://staging.petstore.example.com/v1"
    api_key_file = "~/.config/petsync/staging.key"   # relative paths: to this file's folder
    timeout = 120                                    # and the other client limits
    extra_fields = "keep"                            # fields beyond the interface's
    state_dir = "/srv/petsync/state"                 # petsync import: the journals' home
    category_map = "categories.csv"                  # petsync import: category names
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from petsync.client.config import ClientConfig, RetryPolicy, normalise_base_url
from petsync.core.apikey import ENV_API_KEY, ApiKey, read_key_file
from petsync.core.errors import ConfigError
from petsync.core.interface import PaginationStyle
from petsync.ops.limits import LIMIT_KEYS, ClientLimits, check_limit, resolve_limits
from petsync.ops.toml_file import read_toml

ENV_BASE_URL = "PETSYNC_BASE_URL"
ENV_ENVIRONMENT = "PETSYNC_ENV"  # chooses the environment, as AWS_PROFILE chooses a profile
ENV_CONFIG = "PETSYNC_CONFIG"  # names the config file
DEFAULT_ENV = "production"
CONFIG_FILE_NAME = "petsync.toml"
_STRING_KEYS: tuple[str, ...] = ("base_url", "api_key_env", "api_key_file", "extra_fields")
# Paths an environment may set for the import: its journals' state folder, its category map.
_PATH_KEYS: tuple[str, ...] = ("state_dir", "category_map")
ENVIRONMENT_KEYS: tuple[str, ...] = _STRING_KEYS + _PATH_KEYS + LIMIT_KEYS

_ENV_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
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


@dataclass(frozen=True)
class Target:
    """A resolved base URL and key, with where each came from (for ``config show``)."""

    base_url: str
    base_url_source: str
    api_key: ApiKey | None
    api_key_source: str | None
    env_name: str = DEFAULT_ENV
    env_source: str = "default"
    config_file: Path | None = None
    config_file_source: str | None = None
    allow_insecure_http: bool = False
    allow_insecure_http_source: str = "default"
    limits: ClientLimits = field(default_factory=ClientLimits)
    extra_fields: str | None = None  # the environment's extra_fields setting, if any
    extra_fields_source: str = "default"
    # The environment's state_dir and category_map (petsync import), with where each is set.
    paths: Mapping[str, tuple[Path, str]] = field(default_factory=dict)

    def client_config(self, *, pagination: PaginationStyle | None = None) -> ClientConfig:
        """The :class:`ClientConfig` for this target; ``pagination`` None keeps its default.

        Use this rather than building ``ClientConfig`` by hand, so ``--allow-insecure-http``
        reaches the one URL check and the limits reach the client.
        """
        limits = self.limits
        config = ClientConfig(
            base_url=self.base_url,
            api_key=self.api_key,
            allow_insecure_http=self.allow_insecure_http,
            request_timeout=limits.timeout,
            max_response_bytes=limits.max_response_size,
            retry=RetryPolicy(max_attempts=limits.retries + 1, budget_seconds=limits.retry_budget),
        )
        return config if pagination is None else replace(config, pagination=pagination)


def env_key_variable(env_name: str) -> str:
    """The default key variable of an environment: ``PETSYNC_<NAME>_API_KEY``.

    >>> env_key_variable("staging-eu")
    'PETSYNC_STAGING_EU_API_KEY'
    """
    return f"PETSYNC_{env_name.upper().replace('-', '_')}_API_KEY"


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
    *, config_path: Path | None, cwd: Path, home: Path, environ: Mapping[str, str]
) -> ConfigFile | None:
    """Find and parse the one config file in use, or None when there is none."""
    named, source = config_path, "--config"
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
    if not _ENV_NAME.match(name):
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


@dataclass(frozen=True)
class TargetView:
    """The settings as far as they resolve (``config show``): None is not set, its source
    where petsync looked; ``problems``: what a command would still need, in its order."""

    base_url: str | None
    base_url_source: str
    api_key: ApiKey | None
    api_key_source: str | None
    env_name: str
    env_source: str
    config_file: Path | None
    config_file_source: str | None
    allow_insecure_http: bool
    allow_insecure_http_source: str
    limits: ClientLimits
    extra_fields: str | None
    extra_fields_source: str
    # The environment's state_dir and category_map (petsync import), with where each is set.
    paths: Mapping[str, tuple[Path, str]] = field(default_factory=dict)
    problems: tuple[ConfigError, ...] = ()  # each names the setting and how to fix it
    missing_key: ConfigError | None = None  # no key found: what to set

    @property
    def needs(self) -> list[str]:
        missing = [self.missing_key] if self.missing_key is not None else []
        return [str(problem) for problem in (*self.problems, *missing)]  # a sentence each

    def target(self, *, require_key: bool = True) -> Target:
        """The :class:`Target`, or the first problem a command would meet, raised."""
        if self.problems:
            raise self.problems[0]
        if require_key and self.missing_key is not None:
            raise self.missing_key
        assert self.base_url is not None  # no problem: the URL was found
        return Target(**{f.name: getattr(self, f.name) for f in fields(Target)})


def _config_path(raw: str, path: Path, home: Path) -> Path:
    """A path in a config file: ``~/`` is the home, a relative one the file's folder."""
    found = home / raw[2:] if raw.startswith("~/") else Path(raw)
    return found if found.is_absolute() else path.parent / found


def resolve_target(
    *,
    base_url: str | None,
    api_key_file: Path | None,
    environ: Mapping[str, str],
    require_key: bool = True,
    env_name: str | None = None,
    env_source: str = "--env",
    config_path: Path | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    allow_insecure_http: bool = False,
    allow_insecure_http_source: str = "--allow-insecure-http",
    limits: Mapping[str, tuple[float | int, str]] | None = None,
) -> Target:
    """Resolve the target of a command from its options, the environment and the config file.

    ``env_name`` None means ``PETSYNC_ENV``, else the default environment; ``env_source``
    names where a given name came from (``--env``, or a job file). ``limits`` holds the
    client limits given by option or job file, each with where it came from, by
    :data:`~petsync.ops.limits.LIMIT_KEYS` name. ``cwd`` and ``home`` default to the
    process's. The first setting missing or wrong raises (see :func:`inspect_target`).
    """
    view = inspect_target(
        base_url=base_url,
        api_key_file=api_key_file,
        environ=environ,
        env_name=env_name,
        env_source=env_source,
        config_path=config_path,
        cwd=cwd,
        home=home,
        allow_insecure_http=allow_insecure_http,
        allow_insecure_http_source=allow_insecure_http_source,
        limits=limits,
    )
    return view.target(require_key=require_key)


def inspect_target(
    *,
    base_url: str | None,
    api_key_file: Path | None,
    environ: Mapping[str, str],
    env_name: str | None = None,
    env_source: str = "--env",
    config_path: Path | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    allow_insecure_http: bool = False,
    allow_insecure_http_source: str = "--allow-insecure-http",
    limits: Mapping[str, tuple[float | int, str]] | None = None,
) -> TargetView:
    """Every setting as far as it resolves; one missing or wrong goes to ``problems``."""
    cwd = Path.cwd() if cwd is None else cwd
    home = Path.home() if home is None else home
    problems: list[ConfigError] = []
    config = None
    try:
        config = find_config_file(config_path=config_path, cwd=cwd, home=home, environ=environ)
    except ConfigError as exc:
        problems.append(exc)
    unread = "not read: see what a command would still need" if problems else None
    if not env_name and environ.get(ENV_ENVIRONMENT, "").strip():
        env_name, env_source = environ[ENV_ENVIRONMENT].strip(), ENV_ENVIRONMENT
    name, name_source = (env_name, env_source) if env_name else (DEFAULT_ENV, "default")
    environment = None
    try:
        environment = _find_environment(config, name, name_source, explicit=bool(env_name))
    except ConfigError as exc:
        problems.append(exc)
    url: str | None = None
    try:
        url, url_source = _resolve_url(base_url, environ, config, environment, name)
        try:
            url = normalise_base_url(url, allow_insecure_http)
        except ConfigError as exc:
            problems.append(ConfigError(f"{exc} (base URL from {url_source})"))
    except ConfigError as exc:
        problems.append(exc)
        url_source = f"looked at --base-url, {ENV_BASE_URL}, base_url of [environments.{name}]"
    insecure_source = allow_insecure_http_source if allow_insecure_http else "default"
    key: ApiKey | None = None
    key_source, missing_key = None, None
    try:
        key, key_source = _resolve_key(api_key_file, environ, environment, name)
    except ConfigError as exc:
        problems.append(exc)
        key_source = "refused: see what a command would still need"
    else:
        if key is None:
            missing_key = ConfigError(
                f"no API key: set {_key_variable(environment, name)} (environment {name!r}) "
                f"or {ENV_API_KEY}, or pass --api-key-file PATH "
                "(a file readable only by you: chmod 600 PATH)"
            )
    try:
        resolved_limits = resolve_limits(
            limits or {},
            environment.limits if environment is not None else {},
            f"{config.path if config else CONFIG_FILE_NAME} [environments.{name}]",
        )
    except ConfigError as exc:
        problems.append(exc)
        resolved_limits = ClientLimits()
    return TargetView(
        base_url=url,
        base_url_source=url_source,
        api_key=key,
        api_key_source=key_source,
        env_name=name,
        env_source=name_source,
        config_file=config.path if config else None,
        config_file_source=config.source if config else unread,
        allow_insecure_http=allow_insecure_http,
        allow_insecure_http_source=insecure_source,
        limits=resolved_limits,
        extra_fields=environment.extra_fields if environment is not None else None,
        extra_fields_source=(
            f"{config.path} [environments.{name}] extra_fields"
            if environment is not None and environment.extra_fields and config is not None
            else "default"
        ),
        paths={
            key: (value, f"{config.path} [environments.{name}] {key}")
            for key, value in (environment.paths if environment is not None else {}).items()
            if config is not None
        },
        problems=tuple(problems),
        missing_key=missing_key,
    )


def _find_environment(
    config: ConfigFile | None, name: str, name_source: str, *, explicit: bool
) -> Environment | None:
    if not _ENV_NAME.match(name):
        raise ConfigError(
            f"environment name {name!r} (from {name_source}) uses letters, digits, '-' and '_'"
        )
    if config is None:
        return None
    environment = config.environments.get(name)
    if environment is None and explicit:
        defined = ", ".join(sorted(config.environments)) or "none"
        raise ConfigError(
            f"environment {name!r} (from {name_source}) is not defined in config file "
            f"{config.path} (defined: {defined}); add an [environments.{name}] table "
            "with base_url"
        )
    return environment


def _resolve_url(
    base_url: str | None,
    environ: Mapping[str, str],
    config: ConfigFile | None,
    environment: Environment | None,
    name: str,
) -> tuple[str, str]:
    if base_url:
        return base_url, "--base-url"
    if environ.get(ENV_BASE_URL, "").strip():
        return environ[ENV_BASE_URL], ENV_BASE_URL
    if environment is not None and environment.base_url and config is not None:
        return environment.base_url, f"{config.path} [environments.{name}] base_url"
    where = (
        f"config file {config.path} has no base_url for [environments.{name}]"
        if config is not None
        else f"no config file ({CONFIG_FILE_NAME} in the working directory or the user "
        "config directory)"
    )
    raise ConfigError(
        f"no base URL: pass --base-url or set {ENV_BASE_URL} "
        "(for example http://127.0.0.1:8080/v1 from `petsync serve`), "
        f"or define base_url under [environments.{name}] in {CONFIG_FILE_NAME}; {where}"
    )


def _key_variable(environment: Environment | None, name: str) -> str:
    if environment is not None and environment.api_key_env:
        return environment.api_key_env
    return env_key_variable(name)


def _resolve_key(
    api_key_file: Path | None,
    environ: Mapping[str, str],
    environment: Environment | None,
    name: str,
) -> tuple[ApiKey | None, str | None]:
    if api_key_file is not None:
        return read_key_file(api_key_file), f"--api-key-file {api_key_file}"
    variable = _key_variable(environment, name)
    if environ.get(variable, "").strip():
        return ApiKey(environ[variable], source=f"environment variable {variable}"), variable
    if environment is not None and environment.api_key_file is not None:
        path = environment.api_key_file
        key = read_key_file(path)
        key.source = f"API key file {path} (api_key_file of [environments.{name}])"
        return key, f"[environments.{name}] api_key_file {path}"
    if environ.get(ENV_API_KEY, "").strip():
        return ApiKey(
            environ[ENV_API_KEY], source=f"environment variable {ENV_API_KEY}"
        ), ENV_API_KEY
    return None, None
