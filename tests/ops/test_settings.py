"""Resolution of environment, config file, base URL and key: order, sources and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError
from petsync.core.wording import COMMAND_LINE
from petsync.ops.settings import env_key_variable, resolve_target

PROD = "https://petstore.example.com/v1"
STAGING = "https://staging.petstore.example.com/v1"


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    cwd, home = tmp_path / "work", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    return cwd, home


def write_config(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


CONFIG = f"""
[environments.production]
base_url = "{PROD}"

[environments.staging]
base_url = "{STAGING}"
"""


def resolve(dirs: tuple[Path, Path], environ: dict[str, str] | None = None, **kwargs: object):  # type: ignore[no-untyped-def]
    cwd, home = dirs
    options: dict[str, object] = {"base_url": None, "api_key_file": None}
    options.update(kwargs)
    return resolve_target(environ=environ or {}, cwd=cwd, home=home, **options)  # type: ignore[arg-type]


def test_base_url_flag_beats_env_var_beats_config_file(dirs: tuple[Path, Path]) -> None:
    write_config(dirs[0] / "petsync.toml", CONFIG)
    env = {"PETSYNC_API_KEY": "k", "PETSYNC_BASE_URL": "https://env.example.com/v1"}
    flag = resolve(dirs, env, base_url="https://flag.example.com/v1")
    assert (flag.base_url, flag.base_url_source) == ("https://flag.example.com/v1", "base_url=")
    var = resolve(dirs, env)
    assert (var.base_url, var.base_url_source) == ("https://env.example.com/v1", "PETSYNC_BASE_URL")
    del env["PETSYNC_BASE_URL"]
    conf = resolve(dirs, env)
    assert conf.base_url == PROD
    assert conf.base_url_source == f"{dirs[0] / 'petsync.toml'} [environments.production] base_url"


def test_config_in_working_directory_beats_user_config_directory(
    dirs: tuple[Path, Path],
) -> None:
    cwd, home = dirs
    write_config(
        home / ".config/petsync/petsync.toml", CONFIG.replace(PROD, "https://user.example.com/v1")
    )
    env = {"PETSYNC_API_KEY": "k"}
    user = resolve(dirs, env)
    assert user.base_url == "https://user.example.com/v1"
    assert user.config_file == home / ".config/petsync/petsync.toml"
    assert user.config_file_source == "user config directory"
    write_config(cwd / "petsync.toml", CONFIG)
    local = resolve(dirs, env)
    assert (local.base_url, local.config_file_source) == (PROD, "working directory")


def test_xdg_config_home_is_the_user_config_directory(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    write_config(tmp_path / "xdg/petsync/petsync.toml", CONFIG)
    target = resolve(dirs, {"PETSYNC_API_KEY": "k", "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert target.config_file == tmp_path / "xdg/petsync/petsync.toml"


def test_config_option_overrides_both_files(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    write_config(dirs[0] / "petsync.toml", CONFIG)
    other = write_config(
        tmp_path / "other.toml", CONFIG.replace(PROD, "https://other.example.com/v1")
    )
    target = resolve(dirs, {"PETSYNC_API_KEY": "k"}, config_path=other)
    assert (target.base_url, target.config_file_source) == (
        "https://other.example.com/v1",
        "config_path=",
    )


def test_missing_config_option_file_is_an_error(dirs: tuple[Path, Path]) -> None:
    with pytest.raises(ConfigError) as err:
        resolve(dirs, {}, config_path=Path("nope.toml"))
    assert (
        str(err.value) == f"config file {dirs[0] / 'nope.toml'} (from config_path=) does not exist"
    )


def test_env_option_chooses_the_environment(dirs: tuple[Path, Path]) -> None:
    write_config(dirs[0] / "petsync.toml", CONFIG)
    target = resolve(dirs, {"PETSYNC_API_KEY": "k"}, env_name="staging")
    assert (target.base_url, target.env_name, target.env_source) == (
        STAGING,
        "staging",
        "env_name=",
    )
    default = resolve(dirs, {"PETSYNC_API_KEY": "k"})
    assert (default.env_name, default.env_source) == ("production", "default")


def test_petsync_env_chooses_the_environment_when_no_option_does(
    dirs: tuple[Path, Path],
) -> None:
    write_config(dirs[0] / "petsync.toml", CONFIG)
    env = {"PETSYNC_API_KEY": "k", "PETSYNC_ENV": "staging"}
    chosen = resolve(dirs, env)
    assert (chosen.base_url, chosen.env_name, chosen.env_source) == (
        STAGING,
        "staging",
        "PETSYNC_ENV",
    )
    given = resolve(dirs, env, env_name="production", env_source="job file jobs/x.toml")
    assert (given.env_name, given.env_source) == ("production", "job file jobs/x.toml")


def test_petsync_env_naming_an_undefined_environment_says_so(dirs: tuple[Path, Path]) -> None:
    path = write_config(dirs[0] / "petsync.toml", CONFIG)
    with pytest.raises(ConfigError) as err:
        resolve(dirs, {"PETSYNC_API_KEY": "k", "PETSYNC_ENV": "qa"})
    assert str(err.value).startswith(
        f"environment 'qa' (from PETSYNC_ENV) is not defined in config file {path} "
    )


def test_petsync_config_names_the_file_when_no_option_does(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    write_config(dirs[0] / "petsync.toml", CONFIG)
    other = write_config(
        tmp_path / "other.toml", CONFIG.replace(PROD, "https://other.example.com/v1")
    )
    env = {"PETSYNC_API_KEY": "k", "PETSYNC_CONFIG": str(other)}
    chosen = resolve(dirs, env)
    assert (chosen.base_url, chosen.config_file, chosen.config_file_source) == (
        "https://other.example.com/v1",
        other,
        "PETSYNC_CONFIG",
    )
    assert resolve(dirs, env, config_path=dirs[0] / "petsync.toml").base_url == PROD
    env["PETSYNC_CONFIG"] = "nope.toml"
    with pytest.raises(ConfigError) as err:
        resolve(dirs, env)
    assert str(err.value) == (
        f"config file {dirs[0] / 'nope.toml'} (from PETSYNC_CONFIG) does not exist"
    )


def test_undefined_environment_is_named_with_the_defined_ones(dirs: tuple[Path, Path]) -> None:
    path = write_config(dirs[0] / "petsync.toml", CONFIG)
    with pytest.raises(ConfigError) as err:
        resolve(dirs, {"PETSYNC_API_KEY": "k"}, env_name="qa")
    assert str(err.value) == (
        f"environment 'qa' (from env_name=) is not defined in config file {path} "
        "(defined: production, staging); add an [environments.qa] table with base_url"
    )


def test_per_environment_key_variable_beats_the_generic_one(dirs: tuple[Path, Path]) -> None:
    write_config(dirs[0] / "petsync.toml", CONFIG)
    env = {"PETSYNC_API_KEY": "generic", "PETSYNC_STAGING_API_KEY": "staging-key"}
    target = resolve(dirs, env, env_name="staging")
    assert target.api_key == ApiKey("staging-key")
    assert target.api_key_source == "PETSYNC_STAGING_API_KEY"


def test_generic_key_variable_is_the_fallback(dirs: tuple[Path, Path]) -> None:
    write_config(dirs[0] / "petsync.toml", CONFIG)
    target = resolve(dirs, {"PETSYNC_API_KEY": "generic"}, env_name="staging")
    assert (target.api_key, target.api_key_source) == (ApiKey("generic"), "PETSYNC_API_KEY")


def test_api_key_env_names_the_variable(dirs: tuple[Path, Path]) -> None:
    write_config(
        dirs[0] / "petsync.toml",
        f'[environments.staging]\nbase_url = "{STAGING}"\napi_key_env = "STAGING_TOKEN"\n',
    )
    target = resolve(
        dirs, {"STAGING_TOKEN": "t", "PETSYNC_STAGING_API_KEY": "x"}, env_name="staging"
    )
    assert (target.api_key, target.api_key_source) == (ApiKey("t"), "STAGING_TOKEN")


def test_api_key_file_of_an_environment_is_relative_to_the_config_file(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    conf_dir = tmp_path / "etc"
    path = write_config(
        conf_dir / "petsync.toml",
        f'[environments.staging]\nbase_url = "{STAGING}"\napi_key_file = "staging.key"\n',
    )
    key_file = conf_dir / "staging.key"
    key_file.write_text("from-file\n")
    key_file.chmod(0o600)
    # The generic variable must not win over the file the environment names.
    target = resolve(dirs, {"PETSYNC_API_KEY": "generic"}, env_name="staging", config_path=path)
    assert target.api_key == ApiKey("from-file")
    assert target.api_key_source == f"[environments.staging] api_key_file {key_file}"


def test_api_key_file_option_beats_every_variable(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    key_file = tmp_path / "k"
    key_file.write_text("file-key")
    key_file.chmod(0o600)
    env = {"PETSYNC_BASE_URL": PROD, "PETSYNC_API_KEY": "a", "PETSYNC_PRODUCTION_API_KEY": "b"}
    target = resolve(dirs, env, api_key_file=key_file)
    assert (target.api_key, target.api_key_source) == (
        ApiKey("file-key"),
        f"api_key_file={str(key_file)!r}",
    )


def test_key_file_readable_by_others_is_refused_with_the_fix(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    key_file = tmp_path / "k"
    key_file.write_text("file-key")
    key_file.chmod(0o644)
    with pytest.raises(ConfigError) as err:
        resolve(dirs, {"PETSYNC_BASE_URL": PROD}, api_key_file=key_file)
    assert str(err.value) == (
        f"API key file {key_file} is readable by group or others (mode 644); "
        f"fix it with: chmod 600 {key_file}"
    )
    assert err.value.exit_code == 2


def test_missing_key_names_the_variables_to_set(dirs: tuple[Path, Path]) -> None:
    with pytest.raises(ConfigError) as err:
        resolve(dirs, {"PETSYNC_BASE_URL": PROD}, env_name="staging")
    assert str(err.value) == (
        # The environment's own variable first, as petsync.example.toml and cron.example use.
        "no API key: set PETSYNC_STAGING_API_KEY (environment 'staging') or PETSYNC_API_KEY, "
        "or pass api_key_file=PATH (a file readable only by you: chmod 600 PATH)"
    )


def test_missing_base_url_says_where_to_set_it(dirs: tuple[Path, Path]) -> None:
    with pytest.raises(ConfigError) as err:
        resolve(dirs, {"PETSYNC_API_KEY": "k"})
    assert str(err.value).startswith("no base URL: pass base_url= or set PETSYNC_BASE_URL")
    assert "define base_url under [environments.production] in petsync.toml" in str(err.value)


def test_plain_http_to_a_remote_host_is_refused(dirs: tuple[Path, Path]) -> None:
    with pytest.raises(ConfigError) as err:
        resolve(dirs, {"PETSYNC_API_KEY": "k"}, base_url="http://petstore.example.com/v1")
    assert "pass allow_insecure_http=True if you really mean it" in str(err.value)
    assert str(err.value).endswith("(base URL from base_url=)")


def test_allow_insecure_http_lets_plain_http_through(dirs: tuple[Path, Path]) -> None:
    target = resolve(
        dirs,
        {"PETSYNC_API_KEY": "k"},
        base_url="http://petstore.example.com/v1",
        allow_insecure_http=True,
    )
    assert target.allow_insecure_http_source == "allow_insecure_http="
    assert target.client_config().base_url == "http://petstore.example.com/v1"
    # A paging style chosen by the command keeps the flag (the one URL check sees it).
    offset = target.client_config(pagination="offset")
    assert (offset.pagination, offset.allow_insecure_http) == ("offset", True)
    assert target.client_config().pagination == "auto"


def test_loopback_http_needs_no_flag(dirs: tuple[Path, Path]) -> None:
    target = resolve(
        dirs, {"PETSYNC_API_KEY": "k", "PETSYNC_BASE_URL": "http://127.0.0.1:8080/v1/"}
    )
    assert target.base_url == "http://127.0.0.1:8080/v1"


def test_old_call_without_new_arguments_still_works(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    target = resolve_target(
        base_url="http://127.0.0.1:1/v1", api_key_file=None, environ={"PETSYNC_API_KEY": "k"}
    )
    assert (target.base_url, target.api_key) == ("http://127.0.0.1:1/v1", ApiKey("k"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[environments.production]\nbase_url = 5\n",
            "[environments.production]: base_url must be a non-empty string, got 5",
        ),
        (
            "[environments.production]\nurl = 'x'\n",
            "[environments.production]: unknown key 'url'; allowed: base_url, api_key_env, "
            "api_key_file, extra_fields, state_dir, category_map, timeout, retries, retry_budget, "
            "max_response_size",
        ),
        (
            "[environments.production]\ntimeout = 0\n",
            "[environments.production]: timeout must be a number of seconds, above 0; got 0",
        ),
        (
            "[environments.production]\nretries = 2.5\n",
            "[environments.production]: retries must be a whole number, 0 or more; got 2.5",
        ),
        (
            "[environments.production]\nretry_budget = 'long'\n",
            "[environments.production]: retry_budget must be a number of seconds, 0 or more; "
            "got 'long'",
        ),
        (
            "[environments.production]\nmax_response_size = '32XB'\n",
            "[environments.production]: max_response_size: '32XB' is not a size; use e.g. "
            "32MiB, 500kB or 1048576",
        ),
        (
            "[environments.production]\napi_key = 'x'\n",
            "[environments.production]: 'api_key' would put an API key in a file others read",
        ),
        ("colour = 'blue'\n", ": unknown key 'colour'; allowed: environments"),
        ("[environments\n", "is not valid TOML"),
    ],
    ids=[
        "wrong-type",
        "unknown-key",
        "timeout-zero",
        "retries-not-whole",
        "retry-budget-text",
        "size-unit-unknown",
        "key-value-refused",
        "unknown-top-level",
        "bad-toml",
    ],
)
def test_invalid_config_file_is_named(dirs: tuple[Path, Path], text: str, message: str) -> None:
    path = write_config(dirs[0] / "petsync.toml", text)
    with pytest.raises(ConfigError) as err:
        resolve(dirs, {"PETSYNC_API_KEY": "k", "PETSYNC_BASE_URL": PROD})
    assert str(path) in str(err.value)
    assert message in str(err.value)


def test_env_key_variable_is_derived_from_the_name() -> None:
    assert env_key_variable("staging") == "PETSYNC_STAGING_API_KEY"
    assert env_key_variable("eu-west") == "PETSYNC_EU_WEST_API_KEY"


def test_limits_come_from_the_option_else_the_environment_else_the_default(
    dirs: tuple[Path, Path],
) -> None:
    path = write_config(
        dirs[0] / "petsync.toml",
        CONFIG + 'timeout = 90\nretries = 0\nmax_response_size = "64MiB"\n',  # staging's
    )
    target = resolve(
        dirs,
        {"PETSYNC_API_KEY": "k"},
        env_name="staging",
        limits={"timeout": (7.5, "--timeout")},
    )
    limits = target.limits
    assert (limits.timeout, limits.source("timeout")) == (7.5, "--timeout")
    where = f"{path} [environments.staging]"
    assert (limits.retries, limits.source("retries")) == (0, f"{where} retries")
    assert (limits.max_response_size, limits.source("max_response_size")) == (
        64 * 1024 * 1024,
        f"{where} max_response_size",
    )
    assert (limits.retry_budget, limits.source("retry_budget")) == (300.0, "default")
    config = target.client_config(pagination="offset")  # the limits reach the client
    assert (config.request_timeout, config.max_response_bytes) == (7.5, 64 * 1024 * 1024)
    assert (config.retry.retries, config.retry.budget_seconds) == (0, 300.0)


def test_the_command_line_is_told_its_options(dirs: tuple[Path, Path]) -> None:
    with pytest.raises(ConfigError) as err:
        resolve(dirs, {}, config_path=Path("nope.toml"), terms=COMMAND_LINE)
    assert str(err.value).endswith("(from --config) does not exist")
    target = resolve(dirs, {"PETSYNC_API_KEY": "k"}, base_url=PROD, terms=COMMAND_LINE)
    assert target.base_url_source == "--base-url"
    with pytest.raises(ConfigError) as err:
        resolve(dirs, {"PETSYNC_BASE_URL": PROD}, terms=COMMAND_LINE)
    assert "pass --api-key-file PATH (a file readable only by you" in err.value.render(COMMAND_LINE)
