"""Every warning reaches a person as a sentence: each ``logger.warning``/``logger.error``
event in petsync's source is found and run through the text renderer; ``--log-format json``
keeps the structured event."""

from __future__ import annotations

import ast
import contextlib
import datetime as dt
import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import petsync
from petsync.cli import cli
from petsync.core.wording import COMMAND_LINE
from petsync.ops.logs import configure_logging
from petsync.ops.sentences import SENTENCES
from tests.export.published import publish_snapshot

PACKAGE = Path(petsync.__file__).parent


def _logged_events() -> list[tuple[str, str, tuple[str, ...]]]:
    """(where, event, field names) of each warning or error logged in petsync's source.

    Fields built in a variable (the CLI's ``error`` event) are taken as its one ``message``.
    """
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("warning", "error", "critical")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                continue
            if isinstance(node.func.value, ast.Attribute):  # context.log.warning: Dagster's
                continue
            names: tuple[str, ...] = ("message",)
            for keyword in node.keywords:
                if keyword.arg == "extra" and isinstance(keyword.value, ast.Dict):
                    for key, value in zip(keyword.value.keys, keyword.value.values, strict=True):
                        if isinstance(key, ast.Constant) and key.value == "fields":
                            names = ("message",)
                            if isinstance(value, ast.Dict):
                                names = tuple(
                                    k.value for k in value.keys if isinstance(k, ast.Constant)
                                )
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            found.append((where, node.args[0].value, names))
    return found


EVENTS = _logged_events()


def test_the_source_logs_warnings_to_check() -> None:
    assert {"history.snapshots_dated_ahead", "import_row_uncertain"} <= {e for _, e, _ in EVENTS}


@pytest.mark.parametrize(("where", "event", "names"), EVENTS, ids=[w for w, _, _ in EVENTS])
def test_each_warning_reads_as_a_sentence_in_the_text_log(
    where: str, event: str, names: tuple[str, ...]
) -> None:
    assert event in SENTENCES, f"{where}: add a sentence for {event!r} to petsync.ops.sentences"
    fields = {name: f"<{name}>" for name in names}
    if "dates" in fields:
        fields["dates"] = ["2100-01-01", "2100-01-02"]  # type: ignore[assignment]
    stream = io.StringIO()
    # A person's terminal: a setting reads as its option (its keyword has an "=" in it).
    handle = configure_logging("text", stream=stream, level="warning", terms=COMMAND_LINE)
    try:
        logging.getLogger("petsync.test").warning(event, extra={"fields": fields})
    finally:
        handle.close()
    line = stream.getvalue().rstrip("\n")
    assert line.startswith("Warning: ")
    assert "\n" not in line
    assert event not in line and "=" not in line  # no structured event, no key=value pairs
    assert "?" not in line, f"{where}: the sentence asks for a field the event does not carry"


def test_a_night_dated_ahead_is_a_sentence_on_the_terminal(tmp_path: Path) -> None:
    day, ahead = dt.date(2026, 11, 21), dt.date(2100, 1, 1)
    publish_snapshot(tmp_path, day, [(1, "Rex", 1, "available")])
    publish_snapshot(tmp_path, ahead, [(1, "Rex", 1, "sold")])

    result = CliRunner().invoke(cli, ["history", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        "Warning: snapshots dated after today (2100-01-01) were left out of the history: a "
        "machine whose clock ran ahead wrote them. They are folded in when their date comes; "
        "delete them if that date is wrong"
    ]


def test_with_json_logs_the_same_warning_stays_a_structured_event(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, dt.date(2100, 1, 1), [(1, "Rex", 1, "sold")])

    result = CliRunner().invoke(cli, ["--log-format", "json", "history", str(tmp_path)])

    assert result.exit_code == 0, result.output
    (line,) = result.stderr.splitlines()
    entry = json.loads(line)
    assert (entry["level"], entry["event"]) == ("warning", "history.snapshots_dated_ahead")
    assert entry["fields"]["dates"] == ["2100-01-01"]


def test_an_event_without_a_sentence_still_reads_as_words() -> None:
    stream = io.StringIO()
    handle = configure_logging("text", stream=stream, level="warning")
    try:
        logging.getLogger("petsync.plugin").warning(
            "cache.too_big", extra={"fields": {"path": "/tmp/c"}}
        )
    finally:
        handle.close()
    assert stream.getvalue() == "Warning: cache too big (path: /tmp/c)\n"


# A script or notebook that configures no logging: Python's own last resort would print the
# bare event name ("history.snapshots_dated_ahead") and nothing else.
LIBRARY_SCRIPT = """
import datetime as dt, sys
from pathlib import Path
from tests.export.published import publish_snapshot
import petsync
folder = Path(sys.argv[1])
publish_snapshot(folder, dt.date(2100, 1, 1), [(1, "Rex", 1, "sold")])
petsync.update_history(folder)
"""


def test_in_a_script_with_no_logging_set_up_a_warning_is_the_same_sentence(
    tmp_path: Path,
) -> None:
    repo = PACKAGE.parent
    env = {**os.environ, "PYTHONPATH": str(repo)}
    env.pop("PYTHONWARNINGS", None)
    done = subprocess.run(
        [sys.executable, "-c", LIBRARY_SCRIPT, str(tmp_path / "out")],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "Warning: snapshots dated after today (2100-01-01) were left out of the history: a "
        "machine whose clock ran ahead wrote them. They are folded in when their date comes; "
        "delete them if that date is wrong"
    ]


def test_logging_set_up_by_the_program_gets_the_record_and_petsync_prints_nothing_more() -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    handler = logging.StreamHandler(stream)
    root.addHandler(handler)
    try:
        with contextlib.redirect_stderr(io.StringIO()) as stderr:
            logging.getLogger("petsync.history.update").warning(
                "history.snapshots_dated_ahead", extra={"fields": {"dates": ["2100-01-01"]}}
            )
    finally:
        root.removeHandler(handler)
    assert stream.getvalue() == "history.snapshots_dated_ahead\n"  # the program's format
    assert stderr.getvalue() == ""  # not a second copy
