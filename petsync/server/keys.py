"""The key the reference server accepts: from a file, the environment, or made fresh.

``petsync serve`` never takes a key value on its command line (it would show in ``ps`` and
shell history). :func:`serve_key` reads ``--api-key-file`` if given, else
``PETSYNC_API_KEY``, else makes a random key that nobody else knows yet; the caller prints
that one once, so clients can be given it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from petsync.core.apikey import ENV_API_KEY, ApiKey, read_key_file

GENERATED_KEY_BYTES = 24  # 32 URL-safe characters


@dataclass(frozen=True)
class ServeKey:
    """The server's key and whether it was generated (then it must be shown once)."""

    key: ApiKey
    generated: bool


def serve_key(
    api_key_file: Path | None,
    environ: Mapping[str, str],
    *,
    token: Callable[[int], str] = secrets.token_urlsafe,
) -> ServeKey:
    """The key from ``api_key_file``, else ``PETSYNC_API_KEY``, else a generated one.

    >>> serve_key(None, {"PETSYNC_API_KEY": " dev-key "}).generated
    False
    >>> serve_key(None, {}, token=lambda n: "fresh").key.reveal()
    'fresh'
    """
    if api_key_file is not None:
        return ServeKey(read_key_file(api_key_file), generated=False)
    from_environ = environ.get(ENV_API_KEY, "").strip()
    if from_environ:
        return ServeKey(ApiKey(from_environ), generated=False)
    return ServeKey(ApiKey(token(GENERATED_KEY_BYTES)), generated=True)
