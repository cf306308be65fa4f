"""Where the base URL and the API key come from.

Resolution order, first found wins: ``--base-url``, then ``PETSYNC_BASE_URL``. The key comes
from ``--api-key-file`` or the ``PETSYNC_API_KEY`` environment variable, never from a
command-line value (it would show in ``ps`` and shell history).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from petsync.apikey import ApiKey
from petsync.errors import ConfigError

ENV_BASE_URL = "PETSYNC_BASE_URL"
ENV_API_KEY = "PETSYNC_API_KEY"


@dataclass(frozen=True)
class Target:
    """A resolved base URL and key, with where each came from (for ``config show``)."""

    base_url: str
    base_url_source: str
    api_key: ApiKey | None
    api_key_source: str | None


def resolve_target(
    *,
    base_url: str | None,
    api_key_file: Path | None,
    environ: Mapping[str, str],
    require_key: bool = True,
) -> Target:
    """Resolve the target of a command from its options and the environment."""
    if base_url:
        url, url_source = base_url, "--base-url"
    elif environ.get(ENV_BASE_URL):
        url, url_source = environ[ENV_BASE_URL], ENV_BASE_URL
    else:
        raise ConfigError(
            f"no base URL: pass --base-url or set {ENV_BASE_URL} "
            "(for example http://127.0.0.1:8080/v1 from `petsync serve`)"
        )
    key: ApiKey | None = None
    key_source: str | None = None
    if api_key_file is not None:
        key, key_source = read_key_file(api_key_file), f"--api-key-file {api_key_file}"
    elif environ.get(ENV_API_KEY, "").strip():
        key, key_source = ApiKey(environ[ENV_API_KEY]), ENV_API_KEY
    elif require_key:
        raise ConfigError(
            f"no API key: set {ENV_API_KEY} or pass --api-key-file PATH "
            "(a file readable only by you: chmod 600 PATH)"
        )
    return Target(url, url_source, key, key_source)


def read_key_file(path: Path) -> ApiKey:
    """Read a key file, refusing one that group or others can read."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read API key file {path}: {exc.strerror}") from exc
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"API key file {path} is readable by group or others "
            f"(mode {stat.S_IMODE(mode):o}); fix it with: chmod 600 {path}"
        )
    if not text.strip():
        raise ConfigError(f"API key file {path} is empty")
    return ApiKey(text)
