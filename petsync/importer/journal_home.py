"""One home for the import journals of each API: a row is created once per API and machine.

A journal belongs to a file's content (its sha256), and now to one folder per API base URL,
not to the output folder: the same bytes imported from another folder, under another name
or with another ``--out-dir`` find the same journal and create nothing twice::

    $XDG_STATE_HOME/petsync/journals/<host-port-path>-<hash>/SHA256.jsonl
    (~/.local/state/petsync/journals/... when XDG_STATE_HOME is not set)

``--state-dir DIR`` (job key ``state_dir``, or ``state_dir`` of the environment in
``petsync.toml``) moves the root: ``DIR/journals/<api>/``. The library's ``run_import``
uses the same home, for its client's base URL, unless ``ImportConfig.journal_home`` names
another folder. Journals an older petsync kept
beside the outputs (``OUT/.petsync/journals/``) are still found and honoured: when that
folder holds the journal of the file (or of the first file of a fix), the import keeps
using it, so a half-done import resumes where it was.

The limit: another machine (or user) is another home, unless the state directory is on a
shared disk; the same file imported there can create its rows again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from petsync.core.errors import ConfigError
from petsync.core.settings_table import STATE_DIR
from petsync.importer.output_paths import JOURNAL_DIR

STATE_VARIABLE = "XDG_STATE_HOME"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def state_root(state_dir: Path | None, environ: Mapping[str, str], home: Path) -> Path:
    """The state directory: ``state_dir``, else ``$XDG_STATE_HOME/petsync``, else
    ``~/.local/state/petsync`` (a relative XDG_STATE_HOME is ignored, as the spec says).

    >>> state_root(None, {"XDG_STATE_HOME": "/var/state"}, Path("/home/ann")).as_posix()
    '/var/state/petsync'
    >>> state_root(None, {}, Path("/home/ann")).as_posix()
    '/home/ann/.local/state/petsync'
    """
    if state_dir is not None:
        return state_dir.expanduser()
    xdg = environ.get(STATE_VARIABLE, "").strip()
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "petsync"
    return home / ".local" / "state" / "petsync"


def api_folder(base_url: str) -> str:
    """A folder name for one API: readable host, port and path, and a hash of the URL.

    >>> api_folder("https://petstore.example.com/v1")
    'petstore.example.com-v1-8b9377729f5f'
    """
    url = base_url.strip().rstrip("/")
    parts = urlsplit(url)
    readable = _UNSAFE.sub("-", f"{parts.netloc}{parts.path}").strip("-.")[:80] or "api"
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    return f"{readable}-{digest}"


def journal_home(
    base_url: str, state_dir: Path | None, environ: Mapping[str, str], home: Path
) -> Path:
    """The folder of the journals of the API at ``base_url``."""
    return state_root(state_dir, environ, home) / "journals" / api_folder(base_url)


def journal_folder(output_dir: Path, home: Path | None, *digests: str) -> Path:
    """Where the journals of an import are: the output folder's own (an older petsync's),
    when it holds the journal of one of ``digests`` (the file's, its first file's), else
    ``home``. Without a home (a dry run with no base URL and no client) it is the output
    folder's, as before.
    """
    legacy = output_dir / JOURNAL_DIR
    if home is None:
        return legacy
    for digest in digests:
        try:
            if digest and (legacy / f"{digest}.jsonl").stat().st_size > 0:
                return legacy
        except OSError:
            continue
    return home


def make_home(home: Path) -> None:
    """Create the journal home, private to the user (journals hold the sheets' names)."""
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise ConfigError(
            f"cannot create the journal folder {home}: {exc.strerror or exc}; fix its "
            "permissions or choose another " + STATE_DIR + " (nothing was sent)"
        ) from exc
