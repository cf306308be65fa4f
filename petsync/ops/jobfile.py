"""Job files: a saved ``petsync export`` or ``petsync import`` as a commented TOML file.

A job file holds one table, ``[export]`` or ``[import]``, whose keys are the long options of
that command in snake_case (``--out-dir`` is ``out_dir``, ``--max-drop`` is ``max_drop``),
plus ``env`` to name the environment. It never holds a key value: the key comes from the
environment or a mode-600 key file, as on the command line::

    # jobs/nightly-export.toml
    [export]
    env = "production"
    out = "snapshots"
    metrics_file = "/var/lib/node_exporter/textfile/petsync-nightly-export.prom"

The allowed keys and their types are not repeated here: the command line describes its
options as :class:`OptionSpec` values (:mod:`petsync.cli.run` derives them from the
commands themselves, so a new option is a new job key with no second list to forget) and
:func:`load_job` checks the file against them. Every error names the file, the key and what
is allowed (exit 2). Relative paths in a job file mean what they mean on the command line:
relative to the working directory the job runs in (``cron.example`` changes into it first).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from petsync.core.errors import ConfigError
from petsync.core.settings_table import SET
from petsync.ops.config_file import secret_key_message
from petsync.ops.toml_file import read_toml

JobKind = Literal["export", "import"]
JOB_KINDS: tuple[JobKind, ...] = ("export", "import")
OptionKind = Literal["string", "integer", "float", "boolean", "path", "choice"]

_KIND_WORDS: dict[str, str] = {
    "string": "a string",
    "path": "a path (string)",
    "integer": "an integer",
    "float": "a number",
    "boolean": "true or false",
    "choice": "one of the allowed strings",
}


@dataclass(frozen=True)
class OptionSpec:
    """One key a job file may hold: the option's snake_case name and the value it takes."""

    key: str
    kind: OptionKind
    multiple: bool = False
    required: bool = False
    choices: tuple[str, ...] = ()
    help: str = ""

    def describe(self) -> str:
        """What the key takes, for error messages: ``one of: parquet, both``."""
        if self.multiple:
            each = "one of: " + ", ".join(self.choices) if self.choices else _KIND_WORDS[self.kind]
            return f"a list, each {each}"
        return "one of: " + ", ".join(self.choices) if self.choices else _KIND_WORDS[self.kind]


# Keys a job table takes besides its command's options: steps that run after the command.
# ``update_history`` folds a published snapshot into OUT/history (``petsync history OUT``),
# also after an exit 4, so the nightly job needs no second cron line.
AFTER_KEYS: dict[JobKind, tuple[OptionSpec, ...]] = {
    "export": (
        OptionSpec(
            "update_history",
            "boolean",
            help="after publishing, update OUT/history as `petsync history OUT` does",
        ),
    ),
    "import": (),
}


@dataclass(frozen=True)
class JobFile:
    """A checked job file: which command, its name (the file's stem) and its option values.

    ``options`` maps keys to TOML values that have passed the type check (lists for options
    that repeat); the command line turns them into the command's own values.
    """

    path: Path
    kind: JobKind
    name: str
    options: Mapping[str, object]

    @property
    def env(self) -> str | None:
        value = self.options.get("env")
        return value if isinstance(value, str) else None


def read_job_kind(path: Path) -> tuple[JobKind, dict[str, object]]:
    """Parse the TOML and find the one job table; return its kind and raw values."""
    try:
        data = read_toml(path, "job file")
    except FileNotFoundError as exc:
        raise ConfigError(f"job file {path} does not exist") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read job file {path}: {exc.strerror}") from exc
    for key in data:
        if key not in JOB_KINDS:
            raise ConfigError(
                secret_key_message(f"job file {path}", key)
                or f"job file {path}: unknown key {key!r} at the top level; "
                "allowed: one [export] or [import] table"
            )
    kinds = [kind for kind in JOB_KINDS if kind in data]
    if not kinds:
        raise ConfigError(f"job file {path}: no job in it; add an [export] or [import] table")
    if len(kinds) > 1:
        raise ConfigError(f"job file {path}: one job per file; it has both [export] and [import]")
    kind = kinds[0]
    table = data[kind]
    if not isinstance(table, dict):
        raise ConfigError(f"job file {path}: {kind} must be a table, [{kind}]")
    return kind, dict(table)


def load_job(
    path: Path,
    specs: Mapping[JobKind, Sequence[OptionSpec]],
    overrides: Mapping[str, object] | None = None,
) -> JobFile:
    """Read and check a job file against the options of the command it runs.

    ``overrides`` (``petsync run --set KEY=VALUE``) replace or add keys before the check, so
    they pass the same checks as the file's own keys; their errors name ``--set``.
    """
    kind, table = read_job_kind(path)
    allowed = {spec.key: spec for spec in specs[kind]}
    where = f"job file {path} [{kind}]"
    options: dict[str, object] = {}
    given = [(key, value, where) for key, value in table.items() if key not in (overrides or {})]
    given += [(key, value, f"{SET.option} {key}") for key, value in (overrides or {}).items()]
    for key, value, source in given:
        secret = secret_key_message(source, key)
        if secret is not None:
            raise ConfigError(secret)
        spec = allowed.get(key)
        if spec is None:
            raise ConfigError(
                f"{source}: unknown key {key!r}; allowed keys: {', '.join(sorted(allowed))}"
            )
        options[key] = _check_value(source, spec, value)
    missing = [spec.key for spec in specs[kind] if spec.required and spec.key not in options]
    if missing:
        spec = allowed[missing[0]]
        hint = f" ({spec.help})" if spec.help else ""
        raise ConfigError(
            f"{where}: missing required key {spec.key!r}{hint}; it takes {spec.describe()}"
        )
    return JobFile(path=path, kind=kind, name=path.stem, options=options)


def parse_override(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` from ``petsync run --set``: VALUE is read as a TOML value (``keep=7``,
    ``sweep=false``, ``status=["sold"]``), else as plain text (``file=inbox/a.csv``).

    >>> parse_override("keep=7"), parse_override("file=inbox/a b.csv")
    (('keep', 7), ('file', 'inbox/a b.csv'))
    """
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"{SET.option} {text!r}: write KEY=VALUE, e.g. {SET.option} keep=7")
    try:
        value: object = tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw
    except RecursionError as exc:  # brackets nested past the parser's depth
        raise ConfigError(f"{SET.option} {key}: the value is nested too deeply to read") from exc
    return key, value


def _check_value(where: str, spec: OptionSpec, value: object) -> object:
    if spec.multiple:
        items = value if isinstance(value, list) else [value]
        return [_check_one(where, spec, item) for item in items]
    if isinstance(value, list):
        raise ConfigError(f"{where}: {spec.key} takes {spec.describe()}, got a list {_show(value)}")
    return _check_one(where, spec, value)


def _check_one(where: str, spec: OptionSpec, value: object) -> object:
    ok: bool
    if spec.kind == "boolean":
        ok = isinstance(value, bool)
    elif spec.kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif spec.kind == "float":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif spec.kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        # The command line reads `--max-drop 0.2` as text too; a TOML number means the same.
        return str(value)
    else:
        ok = isinstance(value, str) and bool(value.strip())
    if ok and spec.choices and value not in spec.choices:
        ok = False
    if not ok:
        raise ConfigError(f"{where}: {spec.key} must be {spec.describe()}, got {_show(value)}")
    return value


def _show(value: object) -> str:
    type_name = {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "list",
        dict: "table",
    }.get(type(value), type(value).__name__)
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    if isinstance(value, bool):
        text = "true" if value else "false"
    return f"{text} ({type_name})"
