"""The client limits a command runs with: request timeout, retries, retry budget, response size.

Each limit is set, first found wins, by its option (``--timeout``, ``--retries``,
``--retry-budget``, ``--max-response-size``) or a job file's key of the same name, by the
key of the same name in the environment's ``[environments.NAME]`` table of
``petsync.toml``, else by the client's default. Every resolved value records where it came
from, for ``petsync config show``::

    [environments.production]
    base_url = "https://petstore.example.com/v1"
    timeout = 120                 # seconds for one request, whole (connect, send, answer)
    retries = 8                   # attempts after the first
    retry_budget = 600            # seconds of retrying, in all
    max_response_size = "64MiB"   # one answer, decompressed (or a number of bytes)

Sizes are a number of bytes, or a number with a unit: ``kB``, ``MB``, ``GB`` (powers of
1000), ``KiB``, ``MiB``, ``GiB`` (powers of 1024, also written ``K``, ``M``, ``G``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from petsync.client.config import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_RETRIES,
    DEFAULT_RETRY_BUDGET,
)
from petsync.core.errors import ConfigError

# The limits' names: option (without --), job-file key and config-file key at once.
LIMIT_KEYS: tuple[str, ...] = ("timeout", "retries", "retry_budget", "max_response_size")

_UNITS: dict[str, int] = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "k": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gib": 1024**3,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
SIZE_EXAMPLE = "e.g. 32MiB, 500kB or 1048576"


def parse_size(text: str) -> int:
    """A size in bytes from ``32MiB``, ``1.5 GB``, ``1048576``; ValueError if it is none.

    >>> parse_size("32MiB"), parse_size("500kB"), parse_size("1048576")
    (33554432, 500000, 1048576)
    """
    match = _SIZE.match(text)
    unit = _UNITS.get(match.group(2).lower() if match else "", 0) if match else 0
    if match is None or (match.group(2) and not unit):
        raise ValueError(f"{text!r} is not a size; use {SIZE_EXAMPLE}")
    size = math.floor(float(match.group(1)) * (unit or 1))
    if size < 1:
        raise ValueError(f"{text!r} is not a size of at least 1 byte")
    return size


def format_size(size: int) -> str:
    """A size in the largest binary unit that divides it: ``32 MiB``, ``1000 bytes``.

    >>> format_size(33554432), format_size(1500)
    ('32 MiB', '1500 bytes')
    """
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} bytes"


@dataclass(frozen=True)
class ClientLimits:
    """The limits one command's client runs with, and where each came from."""

    timeout: float = DEFAULT_REQUEST_TIMEOUT
    retries: int = DEFAULT_RETRIES
    retry_budget: float = DEFAULT_RETRY_BUDGET
    max_response_size: int = DEFAULT_MAX_RESPONSE_BYTES
    sources: Mapping[str, str] = field(default_factory=dict)

    def source(self, key: str) -> str:
        """Where ``key``'s value came from: an option, a file and key, or ``default``."""
        return self.sources.get(key, "default")


def check_limit(where: str, key: str, value: object) -> float | int:
    """A limit's value from a config file, checked; the error names the file and key."""
    if key == "max_response_size":
        return _size(where, value)
    if key == "retries":
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        raise ConfigError(f"{where}: retries must be a whole number, 0 or more; got {value!r}")
    return _seconds(where, key, value, allow_zero=key == "retry_budget")


def _size(where: str, value: object) -> int:
    if isinstance(value, str):
        try:
            return parse_size(value)
        except ValueError as exc:
            raise ConfigError(f"{where}: max_response_size: {exc}") from exc
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ConfigError(f"{where}: max_response_size must be a size ({SIZE_EXAMPLE}), got {value!r}")


def _seconds(where: str, key: str, value: object, *, allow_zero: bool) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        at_least_ok = value > 0 or (allow_zero and value == 0)
        if math.isfinite(value) and at_least_ok:
            return float(value)
    at_least = "0 or more" if allow_zero else "above 0"
    raise ConfigError(f"{where}: {key} must be a number of seconds, {at_least}; got {value!r}")


def resolve_limits(
    given: Mapping[str, tuple[float | int, str]],
    configured: Mapping[str, float | int],
    configured_where: str,
) -> ClientLimits:
    """The limits from the values given (each with its source), else the environment's
    (``configured_where`` names its file and table), else the defaults."""
    chosen: dict[str, tuple[float | int, str]] = {}
    for key in LIMIT_KEYS:
        if key in given:
            chosen[key] = given[key]
        elif key in configured:
            chosen[key] = (configured[key], f"{configured_where} {key}")
    defaults = ClientLimits()
    return ClientLimits(
        timeout=float(chosen.get("timeout", (defaults.timeout, ""))[0]),
        retries=int(chosen.get("retries", (defaults.retries, ""))[0]),
        retry_budget=float(chosen.get("retry_budget", (defaults.retry_budget, ""))[0]),
        max_response_size=int(chosen.get("max_response_size", (defaults.max_response_size, ""))[0]),
        sources={key: source for key, (_, source) in chosen.items()},
    )
