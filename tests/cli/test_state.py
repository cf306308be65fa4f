"""Typed state of one invocation: the target options a command is given, and run's merge."""

from __future__ import annotations

from pathlib import Path

import pytest

from petsync.cli.state import TargetOptions

JOB = TargetOptions(
    base_url="https://job.example.com/v1",
    api_key_file=Path("job.key"),
    env="staging",
    config=Path("job.toml"),
    env_source="job file jobs/nightly.toml",
)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (TargetOptions(), JOB),
        (
            TargetOptions(env="production"),
            TargetOptions(
                base_url="https://job.example.com/v1",
                api_key_file=Path("job.key"),
                env="production",
                config=Path("job.toml"),
                env_source="--env",
            ),
        ),
        (
            TargetOptions(
                base_url="https://run.example.com/v1",
                api_key_file=Path("run.key"),
                config=Path("run.toml"),
                allow_insecure_http=True,
            ),
            TargetOptions(
                base_url="https://run.example.com/v1",
                api_key_file=Path("run.key"),
                env="staging",
                config=Path("run.toml"),
                allow_insecure_http=True,
                env_source="job file jobs/nightly.toml",
            ),
        ),
    ],
    ids=["nothing-given-keeps-the-job", "env-given-names-its-source", "each-given-value-wins"],
)
def test_runs_own_options_win_over_the_job_files(
    given: TargetOptions, expected: TargetOptions
) -> None:
    assert JOB.overridden_by(given) == expected
