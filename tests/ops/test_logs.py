"""Log output: JSON lines for shippers, text for people, the key redacted in both."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.core.apikey import ApiKey
from petsync.ops.logs import LogHandle, configure_logging, keys_from_environ

KEY = ApiKey("sk-LOGS-CANARY-777")
log = logging.getLogger("petsync.test_logs")


@pytest.fixture
def stream() -> io.StringIO:
    return io.StringIO()


@pytest.fixture
def json_log(stream: io.StringIO) -> Iterator[LogHandle]:
    handle = configure_logging("json", stream=stream, level="info", keys=[KEY])
    yield handle
    handle.close()


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_json_line_carries_time_level_event_and_fields(
    stream: io.StringIO, json_log: LogHandle
) -> None:
    log.info("export.done", extra={"fields": {"pets": 250, "complete": True}})
    (line,) = lines(stream)
    entry = json.loads(line)
    assert entry["level"] == "info"
    assert entry["event"] == "export.done"
    assert entry["logger"] == "petsync.test_logs"
    assert entry["fields"] == {"pets": 250, "complete": True}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["time"])


def test_each_record_is_one_json_object_per_line(stream: io.StringIO, json_log: LogHandle) -> None:
    log.warning("a", extra={"fields": {"text": "two\nlines"}})
    log.error("b")
    parsed = [json.loads(line) for line in lines(stream)]
    assert [(p["level"], p["event"], p["fields"]) for p in parsed] == [
        ("warning", "a", {"text": "two\nlines"}),
        ("error", "b", {}),
    ]


def test_known_key_is_redacted_in_fields_event_and_traceback(
    stream: io.StringIO, json_log: LogHandle
) -> None:
    try:
        raise RuntimeError(f"boom with {KEY.reveal()}")
    except RuntimeError:
        log.exception(
            f"saw {KEY.reveal()}",
            extra={"fields": {"header": f'x"{KEY.reveal()}', "nested": [{"k": KEY.reveal()}]}},
        )
    text = stream.getvalue()
    assert KEY.reveal() not in text
    entry = json.loads(text)
    assert entry["event"] == "saw ***"
    assert entry["fields"] == {"header": 'x"***', "nested": [{"k": "***"}]}
    assert "RuntimeError: boom with ***" in entry["exc"]


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_short_key_mangles_no_other_word(stream: io.StringIO, log_format: str) -> None:
    handle = configure_logging(log_format, stream=stream, level="info", keys=[ApiKey("x")])
    try:
        log.info("done", extra={"fields": {"exit_code": 2, "message": "x is no max"}})
        log.error("error", extra={"fields": {"exit_code": 2, "message": "x is no max"}})
    finally:
        handle.close()
    info, error = stream.getvalue().splitlines()
    assert "exit_code" in info and "max" in info
    if log_format == "json":
        assert json.loads(info)["fields"] == {"exit_code": 2, "message": "*** is no max"}
        assert json.loads(error)["fields"] == {"exit_code": 2, "message": "*** is no max"}
    else:
        assert info.endswith(' done exit_code=2 message="*** is no max"')
        assert error == "Error: *** is no max"  # a person's sentence; "max" stays whole


def test_a_key_with_a_quote_leaves_the_line_valid_json(stream: io.StringIO) -> None:
    key = ApiKey('ax"')  # the serialised `"relax"` holds it, though no value does
    handle = configure_logging("json", stream=stream, level="info", keys=[key])
    try:
        log.error("relax", extra={"fields": {"header": f"Token {key.reveal()}", "v": "relax"}})
    finally:
        handle.close()
    (line,) = lines(stream)
    entry = json.loads(line)
    assert (entry["event"], entry["fields"]) == ("relax", {"header": "Token ***", "v": "relax"})


def test_numbers_json_cannot_hold_are_written_as_strings(
    stream: io.StringIO, json_log: LogHandle
) -> None:
    log.info("rate", extra={"fields": {"rate": float("inf"), "mean": float("nan")}})
    (line,) = lines(stream)
    assert json.loads(line, parse_constant=pytest.fail)["fields"] == {"rate": "inf", "mean": "nan"}


def test_key_added_after_setup_is_redacted(stream: io.StringIO, json_log: LogHandle) -> None:
    later = ApiKey("resolved-later-key")
    json_log.add_key(later)
    log.info("request", extra={"fields": {"auth": "resolved-later-key"}})
    assert json.loads(stream.getvalue())["fields"] == {"auth": "***"}


def test_bearer_header_is_redacted_without_knowing_the_key(
    stream: io.StringIO, json_log: LogHandle
) -> None:
    log.info("headers", extra={"fields": {"authorization": "Bearer unknown-token-1"}})
    assert "unknown-token-1" not in stream.getvalue()


def test_text_format_is_one_readable_line(stream: io.StringIO) -> None:
    handle = configure_logging("text", stream=stream, level="info", keys=[KEY])
    try:
        log.info(
            "import.row", extra={"fields": {"row": 7, "name": "Rex the dog", "key": KEY.reveal()}}
        )
    finally:
        handle.close()
    (line,) = lines(stream)
    assert re.fullmatch(
        r"\S+Z INFO petsync\.test_logs import\.row row=7 name=\"Rex the dog\" key=\*\*\*", line
    )


def test_level_filters_and_close_restores_the_logger(stream: io.StringIO) -> None:
    logger = logging.getLogger("petsync")
    before = logger.level
    handle = configure_logging("json", stream=stream, level="warning")
    log.info("hidden")
    log.warning("shown")
    handle.close()
    log.warning("after close")
    assert [json.loads(line)["event"] for line in lines(stream)] == ["shown"]
    assert logger.level == before
    assert handle.handler not in logger.handlers


def test_keys_from_environ_takes_every_petsync_key_variable() -> None:
    keys = keys_from_environ(
        {"PETSYNC_API_KEY": "a", "PETSYNC_STAGING_API_KEY": "b", "PETSYNC_BASE_URL": "u", "X": "y"}
    )
    assert keys == [ApiKey("a"), ApiKey("b")]


def test_log_options_leave_stdout_to_the_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(
        cli,
        ["--log-format", "json", "--log-level", "info", "config", "show"],
        env={"PETSYNC_BASE_URL": "http://127.0.0.1:9/v1", "PETSYNC_API_KEY": "k"},
    )
    assert result.exit_code == 0, result.output
    assert result.stderr == ""  # config show logs nothing: stdout is the command's own
    assert "base URL      http://127.0.0.1:9/v1  [PETSYNC_BASE_URL]" in result.stdout


def test_log_format_rejects_unknown_values() -> None:
    result = CliRunner().invoke(cli, ["--log-format", "xml", "config", "show"])
    assert result.exit_code == 2
    assert "'xml' is not one of 'text', 'json'" in result.output
