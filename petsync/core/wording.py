"""Messages that name a setting in the terms of whoever reads them.

One setting has three names: the command line's option (``--scratch-dir``), a job file's
key (``scratch_dir``) and the library's keyword (``scratch_dir=``). A message names the
setting itself, a :class:`Setting` from :mod:`petsync.core.settings_table`, never one of
its names; the message is :class:`Words`, text and mentions in order, and is put into
words for a reader only when shown::

    >>> from petsync.core.settings_table import MEMORY_BUDGET
    >>> said = "raise " + MEMORY_BUDGET.given("512MiB") + " and run it again"
    >>> str(said)
    "raise memory_budget='512MiB' and run it again"
    >>> said.render(COMMAND_LINE)
    'raise --memory-budget 512MiB and run it again'
    >>> said.render(job_file_terms(Path("jobs/nightly.toml")))
    'raise memory_budget = "512MiB" in jobs/nightly.toml and run it again'

``str()`` of a message (and of a :class:`~petsync.core.errors.PetsyncError` holding one)
is the library's wording: a notebook is told the keyword it has. The one place each caller
shows errors renders its own terms: the command line's error boundary, and ``petsync run``
for a job file's command. Nothing here is switched globally; the reader is an argument.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Caller = Literal["library", "command line", "job file"]
# The commands whose options a job file holds as keys (the job file's tables).
JOB_COMMANDS: tuple[str, ...] = ("export", "import")
_UNSET = object()


@dataclass(frozen=True)
class Terms:
    """Whose terms a message is put in: the library's, the command line's, a job file's."""

    caller: Caller
    job_file: Path | None = None


LIBRARY = Terms("library")
COMMAND_LINE = Terms("command line")


def job_file_terms(path: Path) -> Terms:
    """The terms of a job file's command: its keys, naming the file."""
    return Terms("job file", path)


class Joined:
    """A piece of a message: joined to text with ``+``, put into words when shown.

    ``str()`` is the library's wording. An f-string raises :class:`TypeError`: it would fix
    the library's words into plain text before the reader is known.
    """

    def render(self, terms: Terms) -> str:
        raise NotImplementedError

    def __add__(self, other: Said | Joined) -> Words:
        return words(self, other)

    def __radd__(self, other: str) -> Words:
        return words(other, self)

    def __format__(self, spec: str) -> str:
        raise TypeError("join a message naming a setting with +, not an f-string")

    def __str__(self) -> str:
        return self.render(LIBRARY)


@dataclass(frozen=True)
class Setting(Joined):
    """One setting, as each caller names it: option, job-file key, library keyword.

    ``option`` is the long option (None for a command's argument, named by ``argument``);
    ``keyword`` the library's keyword, or what the library takes instead, in its own
    spelling (None when only the command line has it: the library then reads the option);
    ``commands`` the commands that take it (``"serve"``, ``"config show"``). A job file of
    one of :data:`JOB_COMMANDS` holds it under :attr:`key`. ``off`` is the option that
    turns a flag off (``--no-sweep``).
    """

    option: str | None
    keyword: str | None
    commands: tuple[str, ...]
    argument: str | None = None
    off: str | None = None

    @property
    def key(self) -> str | None:
        """The job-file key, when a job command takes the setting: the long option in
        snake_case (``--out-dir`` is ``out_dir``), an argument its name."""
        if not set(self.commands) & set(JOB_COMMANDS):
            return None
        if self.option is None:
            return self.argument
        return self.option.removeprefix("--").replace("-", "_")

    def given(self, value: object) -> Mention:
        """This setting with a value: ``--extra-fields keep``, ``extra_fields = "keep"``."""
        return Mention(self, value)

    def render(self, terms: Terms) -> str:
        return Mention(self).render(terms)


class Placeholder(str):
    """A value a message stands in for, shown as it is in any terms: ``PATH``, ``N``."""

    __slots__ = ()


@dataclass(frozen=True)
class Mention(Joined):
    """A setting named in a message, with the value it would take if the message says one."""

    setting: Setting
    value: object = _UNSET

    def render(self, terms: Terms) -> str:
        """The setting's name (and value) in ``terms``; the command line's where the caller
        has no name for it (a job runs under ``petsync run``, a command line too)."""
        setting, has_value = self.setting, self.value is not _UNSET
        if terms.caller == "job file" and setting.key is not None:
            said = f"{setting.key} = {_toml(self.value)}" if has_value else setting.key
            return f"{said} in {terms.job_file}"
        if terms.caller == "library" and setting.keyword is not None:
            value = self.value if isinstance(self.value, Placeholder) else repr(self.value)
            return f"{setting.keyword}={value}" if has_value else f"{setting.keyword}="
        option = setting.option or (setting.argument or "").upper()
        if not has_value:
            return option
        if isinstance(self.value, bool):
            return option if self.value or setting.off is None else setting.off
        return f"{option} {self.value}"


@dataclass(frozen=True)
class Command:
    """A command, and the library function that does what it does."""

    name: str  # "history": petsync history
    function: str  # "update_history"

    def run(self, argument: str, *settings: Mention) -> Call:
        """This command on ``argument`` with ``settings``, to be named in a message."""
        return Call(self, argument, settings)


@dataclass(frozen=True)
class Call(Joined):
    """A command to run, named in a message: ``petsync history DIR --rebuild`` on the
    command line, ``update_history('DIR', rebuild=True)`` for the library."""

    command: Command
    argument: str
    settings: tuple[Mention, ...] = ()

    def render(self, terms: Terms) -> str:
        if terms.caller == "library":
            given = [repr(self.argument), *(m.render(LIBRARY) for m in self.settings)]
            return f"`{self.command.function}({', '.join(given)})`"
        given = [self.argument, *(m.render(COMMAND_LINE) for m in self.settings)]
        return f"`petsync {self.command.name} {' '.join(given)}`"


@dataclass(frozen=True)
class Words(Joined):
    """A message: text and the settings (and commands) it names, in order; put into words
    by :meth:`render`. Built with ``+`` from strings (f-strings too), settings and mentions.
    """

    parts: tuple[str | Joined, ...]

    def render(self, terms: Terms) -> str:
        """The message as ``terms``' reader reads it."""
        return "".join(part if isinstance(part, str) else part.render(terms) for part in self.parts)


Said = str | Words


def words(*parts: Said | Joined) -> Words:
    """One message of ``parts``: ``words("pass ", OUT, " with a new folder")``."""
    found: list[str | Joined] = []
    for part in parts:
        found.extend(part.parts if isinstance(part, Words) else (part,))
    return Words(tuple(found))


def render(said: Said, terms: Terms) -> str:
    """A message (or plain text) in ``terms``."""
    return said if isinstance(said, str) else said.render(terms)


def joined(separator: str, items: Iterable[Said]) -> Said:
    """``separator.join(items)`` that keeps each item's mentions."""
    result: Said = ""
    for index, item in enumerate(items):
        result = item if index == 0 else result + separator + item
    return result


def _toml(value: object) -> str:
    """A value as a job file writes it: ``true``, ``7``, ``"keep"``."""
    if isinstance(value, Placeholder):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(str(value))
