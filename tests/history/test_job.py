"""An export job file with ``update_history = true`` updates the history after publishing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.formats.snapshots import list_snapshots
from petsync.history.load import load_history

JOB = """[export]
base_url = "{base_url}"
out = "{out}"
update_history = true
"""


@pytest.mark.parametrize(
    ("pagination", "code", "open_versions"),
    [("link", 0, 150), ("none", 4, 145)],  # unpaged: a page per listing, their union
    ids=["complete", "incomplete"],
)
def test_export_job_updates_the_history_after_publishing(
    petstore_server: Any, tmp_path: Path, pagination: str, code: int, open_versions: int
) -> None:
    srv = petstore_server(seed_pets=150, pagination=pagination)
    out = tmp_path / "out"
    job = tmp_path / "nightly.toml"
    job.write_text(JOB.format(base_url=srv.base_url, out=out))

    result = CliRunner().invoke(
        cli, ["run", str(job)], env={"PETSYNC_API_KEY": srv.api_key.reveal()}
    )

    assert result.exit_code == code, result.output
    history = load_history(out)
    assert history.valid_to.isna().sum() == open_versions
    assert list_snapshots(out)[-1].pets == open_versions
    assert result.stdout.splitlines()[-1].startswith(f"{out / 'history'}: rebuilt, ")


def test_update_history_takes_true_or_false(tmp_path: Path) -> None:
    job = tmp_path / "nightly.toml"
    job.write_text('[export]\nout = "out"\nupdate_history = "yes"\n')

    result = CliRunner().invoke(cli, ["run", "--check", str(job)])

    assert result.exit_code == 2
    assert "update_history must be true or false" in result.stderr
