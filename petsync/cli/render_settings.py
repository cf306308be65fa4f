"""How the resolved settings read (``petsync config show``, ``petsync run --check``).

Each setting shows its value, or "not set", and where it came from (or where petsync looked
for it); ``config show`` then says what a command would still need. The key shows as
hidden: its value never leaves :class:`~petsync.core.apikey.ApiKey`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from petsync.core.apikey import ENV_API_KEY, redact
from petsync.core.settings_table import API_KEY_FILE
from petsync.core.wording import COMMAND_LINE
from petsync.ops.limits import format_size
from petsync.ops.settings import env_key_variable

if TYPE_CHECKING:
    from petsync.ops.limits import ClientLimits
    from petsync.ops.settings import Target, TargetView

NOT_SET = "not set"


def target_lines(target: Target | TargetView) -> list[str]:
    """Each resolved setting, its value and where it came from; the key shows as hidden."""
    return [
        redact(f"{label:<14}{text}  [{source}]", [target.api_key])
        for _, label, text, _, source in _target_rows(target)
    ]


def needs_lines(view: TargetView) -> list[str]:
    """What a command talking to the API would still need, or that it has all it needs."""
    needs = view.needs
    if not needs:
        return ["ready: a command has the base URL and key it needs"]
    return [
        "a command would still need:",
        *(f"  - {need.render(COMMAND_LINE)}" for need in needs),
    ]


def target_document(target: Target | TargetView) -> dict[str, Any]:
    """What ``petsync config show --json`` prints: each setting's value and source.

    A value is null when not set. The key's value is ``"***"`` when one was found, never
    the key.
    """
    return {
        name: {"value": value, "source": redact(source, [target.api_key])}
        for name, _, _, value, source in _target_rows(target)
    }


def _target_rows(target: Target | TargetView) -> list[tuple[str, str, str, object, str]]:
    """(JSON name, label, text, JSON value, source) of each setting ``config show`` shows."""

    key_help = (
        f"{NOT_SET}: set {env_key_variable(target.env_name)} or {ENV_API_KEY}, "
        f"or pass {API_KEY_FILE.option} PATH"
    )
    config_file = str(target.config_file) if target.config_file else None
    return [
        ("environment", "environment", target.env_name, target.env_name, target.env_source),
        (
            "config_file",
            "config file",
            config_file or "none",
            config_file,
            target.config_file_source or "no petsync.toml found",
        ),
        (
            "base_url",
            "base URL",
            target.base_url or NOT_SET,
            target.base_url,
            target.base_url_source,
        ),
        (
            "api_key",
            "API key",
            "*** (hidden)" if target.api_key else NOT_SET if target.api_key_source else key_help,
            "***" if target.api_key else None,
            target.api_key_source or "nowhere",
        ),
        (
            "allow_insecure_http",
            "insecure http",
            "allowed" if target.allow_insecure_http else "refused to non-loopback hosts",
            target.allow_insecure_http,
            target.allow_insecure_http_source,
        ),
        *_limit_rows(target.limits),
    ]


def _limit_rows(limits: ClientLimits) -> list[tuple[str, str, str, object, str]]:

    rows: list[tuple[str, str, str, object]] = [
        ("timeout", "timeout", f"{limits.timeout:g} s a request", limits.timeout),
        ("retries", "retries", str(limits.retries), limits.retries),
        ("retry_budget", "retry budget", f"{limits.retry_budget:g} s", limits.retry_budget),
        (
            "max_response_size",
            "max response",
            format_size(limits.max_response_size),
            limits.max_response_size,
        ),
    ]
    return [(name, label, text, value, limits.source(name)) for name, label, text, value in rows]
