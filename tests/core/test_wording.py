"""A message names a setting once; each reader is told it in its own terms."""

from __future__ import annotations

from pathlib import Path

import pytest

from petsync.core.errors import ConfigError, IncompleteError
from petsync.core.settings_table import (
    EXTRA_FIELDS,
    FILE,
    HISTORY_COMMAND,
    REBUILD,
    SCRATCH_DIR,
    SET,
    SWEEP,
)
from petsync.core.wording import (
    COMMAND_LINE,
    LIBRARY,
    Placeholder,
    Setting,
    job_file_terms,
    joined,
    render,
    words,
)

JOB = job_file_terms(Path("jobs/nightly.toml"))


@pytest.mark.parametrize(
    ("said", "library", "command_line", "job_file"),
    [
        (SCRATCH_DIR, "scratch_dir=", "--scratch-dir", "scratch_dir in jobs/nightly.toml"),
        (
            EXTRA_FIELDS.given("keep"),
            "extra_fields='keep'",
            "--extra-fields keep",
            'extra_fields = "keep" in jobs/nightly.toml',
        ),
        (SWEEP.given(False), "sweep=False", "--no-sweep", "sweep = false in jobs/nightly.toml"),
        (
            SCRATCH_DIR.given(Placeholder("DIR")),
            "scratch_dir=DIR",
            "--scratch-dir DIR",
            "scratch_dir = DIR in jobs/nightly.toml",
        ),
        (FILE, "path=", "FILE", "file in jobs/nightly.toml"),
        (SET, "--set", "--set", "--set"),  # run's own: no keyword, no job key
    ],
    ids=["bare", "value", "flag-off", "placeholder", "argument", "command-line-only"],
)
def test_a_setting_reads_in_each_callers_terms(
    said: object, library: str, command_line: str, job_file: str
) -> None:
    message = words("pass ", said)  # type: ignore[arg-type]
    assert (str(message), message.render(COMMAND_LINE), message.render(JOB)) == (
        f"pass {library}",
        f"pass {command_line}",
        f"pass {job_file}",
    )


def test_a_command_to_run_reads_as_a_call_for_the_library() -> None:
    said = "rebuild it with " + HISTORY_COMMAND.run("s3://b/p", REBUILD.given(True))
    assert str(said) == "rebuild it with `update_history('s3://b/p', rebuild=True)`"
    assert said.render(COMMAND_LINE) == "rebuild it with `petsync history s3://b/p --rebuild`"


def test_an_error_says_the_librarys_terms_and_renders_any_other() -> None:
    error = ConfigError("the scratch folder (" + SCRATCH_DIR + ") is full")
    assert str(error) == error.message == "the scratch folder (scratch_dir=) is full"
    assert error.render(COMMAND_LINE) == "the scratch folder (--scratch-dir) is full"
    assert ConfigError("plain").render(JOB) == "plain"


def test_incomplete_warnings_keep_their_mentions() -> None:
    error = IncompleteError("flagged", warnings=("pass " + SCRATCH_DIR, "plain"))
    shown = [render(w, COMMAND_LINE) for w in error.warnings]
    assert shown == ["pass --scratch-dir", "plain"]


def test_joined_keeps_each_items_mentions() -> None:
    said = joined("; ", ["a " + SCRATCH_DIR, "b", "c " + SET])
    assert render(said, COMMAND_LINE) == "a --scratch-dir; b; c --set"
    assert render(joined(", ", ["x", "y"]), LIBRARY) == "x, y"


def test_an_f_string_cannot_fix_a_setting_into_the_librarys_terms() -> None:
    with pytest.raises(TypeError, match="not an f-string"):
        f"pass {SCRATCH_DIR}"  # noqa: B018
    with pytest.raises(TypeError, match="not an f-string"):
        f"{'pass ' + SCRATCH_DIR}"  # noqa: B018


def test_a_setting_of_no_job_command_has_no_job_key() -> None:
    assert Setting("--port", "port", ("serve",)).key is None
    assert SCRATCH_DIR.key == "scratch_dir"
