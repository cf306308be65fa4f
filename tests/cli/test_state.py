"""Typed state of one invocation: the target options a command is given, and run's merge."""

from __future__ import annotations

from pathlib import Path

import pytest

from petsync.cli.state import TargetOptions

JOB_FILE = "job file jobs/nightly.toml"
JOB = TargetOptions.given_by(
    JOB_FILE,
    base_url="https://job.example.com/v1",
    api_key_file=Path("job.key"),
    env="staging",
    config=Path("job.toml"),
    timeout=30.0,
    retries=2,
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
                timeout=30.0,
                retries=2,
                sources=(
                    ("base_url", JOB_FILE),
                    ("api_key_file", JOB_FILE),
                    ("env", "--env"),
                    ("config", JOB_FILE),
                    ("timeout", JOB_FILE),
                    ("retries", JOB_FILE),
                ),
            ),
        ),
        (
            TargetOptions(
                base_url="https://run.example.com/v1",
                api_key_file=Path("run.key"),
                config=Path("run.toml"),
                allow_insecure_http=True,
                retries=0,
                max_response_size=1024,
            ),
            TargetOptions(
                base_url="https://run.example.com/v1",
                api_key_file=Path("run.key"),
                env="staging",
                config=Path("run.toml"),
                allow_insecure_http=True,
                timeout=30.0,
                retries=0,
                max_response_size=1024,
                sources=(
                    ("base_url", "--base-url"),
                    ("api_key_file", "--api-key-file"),
                    ("env", JOB_FILE),
                    ("config", "--config"),
                    ("allow_insecure_http", "--allow-insecure-http"),
                    ("timeout", JOB_FILE),
                    ("retries", "--retries"),
                    ("max_response_size", "--max-response-size"),
                ),
            ),
        ),
    ],
    ids=["nothing-given-keeps-the-job", "env-given-names-its-source", "each-given-value-wins"],
)
def test_runs_own_options_win_over_the_job_files(
    given: TargetOptions, expected: TargetOptions
) -> None:
    merged = JOB.overridden_by(given)

    assert merged == expected
    assert merged.env_source == expected.source("env")


def test_given_limits_carry_their_sources() -> None:
    merged = JOB.overridden_by(TargetOptions(retries=0))

    assert merged.given_limits() == {"timeout": (30.0, JOB_FILE), "retries": (0, "--retries")}
