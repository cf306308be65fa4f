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

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from petsync.client.config import ClientConfig, RetryPolicy, normalise_base_url
from petsync.core.apikey import ENV_API_KEY, ApiKey, read_key_file
from petsync.core.errors import ConfigError
from petsync.core.interface import PaginationStyle
from petsync.core.settings_table import ALLOW_INSECURE_HTTP, API_KEY_FILE, BASE_URL, ENV
from petsync.core.wording import LIBRARY, Mention, Placeholder, Terms, Words
from petsync.ops.config_file import (
    CONFIG_FILE_NAME,
    ENV_NAME,
    ConfigFile,
    Environment,
    find_config_file,
)
from petsync.ops.limits import ClientLimits, resolve_limits

ENV_BASE_URL = "PETSYNC_BASE_URL"
ENV_ENVIRONMENT = "PETSYNC_ENV"  # chooses the environment, as AWS_PROFILE chooses a profile
DEFAULT_ENV = "production"


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
    def needs(self) -> list[Words]:
        """What a command would still need, a sentence each; ``str()`` of one is the
        library's wording, the command line renders its own (:mod:`petsync.core.wording`)."""
        missing = [self.missing_key] if self.missing_key is not None else []
        return [problem.words for problem in (*self.problems, *missing)]

    def target(self, *, require_key: bool = True) -> Target:
        """The :class:`Target`, or the first problem a command would meet, raised."""
        if self.problems:
            raise self.problems[0]
        if require_key and self.missing_key is not None:
            raise self.missing_key
        assert self.base_url is not None  # no problem: the URL was found
        return Target(**{f.name: getattr(self, f.name) for f in fields(Target)})


def resolve_target(
    *,
    base_url: str | None,
    api_key_file: Path | None,
    environ: Mapping[str, str],
    require_key: bool = True,
    env_name: str | None = None,
    env_source: str | None = None,
    config_path: Path | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    allow_insecure_http: bool = False,
    allow_insecure_http_source: str | None = None,
    limits: Mapping[str, tuple[float | int, str]] | None = None,
    terms: Terms = LIBRARY,
) -> Target:
    """Resolve the target of a command from its options, the environment and the config file.

    ``env_name`` None means ``PETSYNC_ENV``, else the default environment; ``env_source``
    names where a given name came from (``--env``, or a job file; by default the setting in
    ``terms``: the keyword ``env_name=`` for the library). ``limits`` holds the client
    limits given by option or job file, each with where it came from, by
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
        terms=terms,
    )
    return view.target(require_key=require_key)


def inspect_target(
    *,
    base_url: str | None,
    api_key_file: Path | None,
    environ: Mapping[str, str],
    env_name: str | None = None,
    env_source: str | None = None,
    config_path: Path | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    allow_insecure_http: bool = False,
    allow_insecure_http_source: str | None = None,
    limits: Mapping[str, tuple[float | int, str]] | None = None,
    terms: Terms = LIBRARY,
) -> TargetView:
    """Every setting as far as it resolves; one missing or wrong goes to ``problems``.

    The sources of values given here name their settings in ``terms`` (``--base-url`` for
    the command line, ``base_url=`` for the library) unless given.
    """
    cwd = Path.cwd() if cwd is None else cwd
    home = Path.home() if home is None else home
    env_source = env_source or Mention(ENV).render(terms)
    problems: list[ConfigError] = []
    config = None
    try:
        config = find_config_file(
            config_path=config_path, cwd=cwd, home=home, environ=environ, terms=terms
        )
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
    given_url = Mention(BASE_URL).render(terms)
    try:
        url, url_source = _resolve_url(base_url, given_url, environ, config, environment, name)
        try:
            url = normalise_base_url(url, allow_insecure_http)
        except ConfigError as exc:
            problems.append(ConfigError(exc.words + f" (base URL from {url_source})"))
    except ConfigError as exc:
        problems.append(exc)
        url_source = f"looked at {given_url}, {ENV_BASE_URL}, base_url of [environments.{name}]"
    insecure_source = "default"
    if allow_insecure_http:
        insecure_source = allow_insecure_http_source or Mention(ALLOW_INSECURE_HTTP).render(terms)
    key: ApiKey | None = None
    key_source, missing_key = None, None
    try:
        key, key_source = _resolve_key(api_key_file, terms, environ, environment, name)
    except ConfigError as exc:
        problems.append(exc)
        key_source = "refused: see what a command would still need"
    else:
        if key is None:
            missing_key = ConfigError(
                f"no API key: set {_key_variable(environment, name)} (environment {name!r}) "
                f"or {ENV_API_KEY}, or pass "
                + API_KEY_FILE.given(Placeholder("PATH"))
                + " (a file readable only by you: chmod 600 PATH)"
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
    if not ENV_NAME.match(name):
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
    given: str,
    environ: Mapping[str, str],
    config: ConfigFile | None,
    environment: Environment | None,
    name: str,
) -> tuple[str, str]:
    if base_url:
        return base_url, given
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
        "no base URL: pass " + BASE_URL + f" or set {ENV_BASE_URL} "
        "(for example http://127.0.0.1:8080/v1 from `petsync serve`), "
        f"or define base_url under [environments.{name}] in {CONFIG_FILE_NAME}; {where}"
    )


def _key_variable(environment: Environment | None, name: str) -> str:
    if environment is not None and environment.api_key_env:
        return environment.api_key_env
    return env_key_variable(name)


def _resolve_key(
    api_key_file: Path | None,
    terms: Terms,
    environ: Mapping[str, str],
    environment: Environment | None,
    name: str,
) -> tuple[ApiKey | None, str | None]:
    if api_key_file is not None:
        return read_key_file(api_key_file), API_KEY_FILE.given(str(api_key_file)).render(terms)
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
