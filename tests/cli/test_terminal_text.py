"""What a server sends reaches the terminal escaped and cut: no escape sequence clears the
screen or retitles the window, no message fills the scrollback."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import respx
from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.core.errors import ApiError
from petsync.ops.logs import configure_logging
from tests.conftest import route_clients_to

BASE = "https://petstore.test/v1"
HOSTILE = "\x1b[2J\x1b]0;owned\x07"  # clear the screen, set the window title


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as router:
        route_clients_to(router, monkeypatch)
        yield router


def invoke(*args: str) -> Result:
    env = {"PETSYNC_API_KEY": "sk-terminal-test", "PETSYNC_BASE_URL": BASE}
    return CliRunner().invoke(cli, list(args), env=env)


def test_a_huge_hostile_error_message_is_one_escaped_cut_line(
    api: respx.MockRouter, isolated: Path
) -> None:
    message = HOSTILE + "x" * 5_000_000
    api.get(f"{BASE}/pets").respond(
        401, json={"code": "unauthorized", "message": message, "status": 401}
    )

    result = invoke("check")

    assert result.exit_code == 3
    (line,) = result.stderr.splitlines()
    assert "\x1b" not in line and "\x07" not in line
    assert "\\x1b[2J\\x1b]0;owned\\x07" in line
    assert "characters, cut)" in line
    assert len(line) < 1_000


def test_a_control_character_that_reaches_an_error_line_is_escaped(
    monkeypatch: pytest.MonkeyPatch, isolated: Path
) -> None:
    # The last barrier: an error whose message was built without shown_text.
    def check(self: object) -> object:
        raise ApiError(f"raw {HOSTILE} {'y' * 10_000}", http_status=500, url=BASE)

    monkeypatch.setattr("petsync.client.client.PetstoreClient.check", check)

    result = invoke("check")

    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("Error: raw \\x1b[2J\\x1b]0;owned\\x07 yyy")
    assert line.endswith("... (10026 characters, cut)")


def test_header_values_of_get_are_escaped(api: respx.MockRouter, isolated: Path) -> None:
    api.get(f"{BASE}/pets/7").respond(
        200,
        json={"id": 7, "name": "Rex", "categoryId": 1},
        headers={"Deprecation": "true", "Sunset": f"soon{HOSTILE}"},
    )

    result = invoke("get", "7")

    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stderr
    assert "  the server sent Sunset: soon\\x1b[2J\\x1b]0;owned\\x07" in result.stderr


def test_text_logs_escape_control_characters_in_values() -> None:
    stream = io.StringIO()
    handle = configure_logging("text", stream=stream, level="info")
    try:
        fields = {"name": f"Rex{HOSTILE}", "note": "a b\x1b"}
        logging.getLogger("petsync.test").info(f"event{HOSTILE}", extra={"fields": fields})
        logging.getLogger("petsync.test").warning(f"event{HOSTILE}", extra={"fields": fields})
    finally:
        handle.close()

    info, warning = stream.getvalue().splitlines()
    assert "\x1b" not in stream.getvalue() and "\x07" not in stream.getvalue()
    assert info.endswith(
        'event\\x1b[2J\\x1b]0;owned\\x07 name=Rex\\x1b[2J\\x1b]0;owned\\x07 note="a b\\u001b"'
    )
    assert warning == (  # a warning reads as a sentence, escaped the same way
        "Warning: event\\x1b[2J\\x1b]0;owned\\x07 (name: Rex\\x1b[2J\\x1b]0;owned\\x07, "
        "note: a b\\x1b)"
    )
