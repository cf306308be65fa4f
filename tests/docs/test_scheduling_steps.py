"""The set-up steps of docs/scheduling.md run as written, as an operator types them.

Each command of "Installing the crontab" runs in bash from the petsync checkout, with a
temporary HOME. Only what needs root or the network changes: ``sudo`` and ``-o petsync``
go, ``/var/lib/petsync`` and ``/etc/petsync`` move into tmp_path, and the steps that
install software, add a user or install the crontab are left out (the crontab's own lines
run in tests/ops/test_cron.py). The operator's one edit, the key line of step 4, is made
where the step says to make it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.docs.markdown import section

ROOT = Path(__file__).resolve().parents[2]
SCHEDULING = (ROOT / "docs" / "scheduling.md").read_text(encoding="utf-8")
TIMEOUT = 60
# Steps that need root, a user account or a download: not run here, and nothing else is left
# out (a new step is run, or named here).
NOT_RUN = re.compile(r"python3 -m venv |pip install |pipx install |useradd |crontab ")
KEY_LINE = "PETSYNC_PRODUCTION_API_KEY=steps-key-0123456789\n"
# A fenced block, also indented inside a numbered step.
SH_BLOCK = re.compile(r"^( *)```sh\n(.*?)^\1```", re.S | re.M)


def steps() -> list[str]:
    """The command lines of the set-up, in order (one per line of each ``sh`` block)."""
    found = section(SCHEDULING, "Installing the crontab")
    return [line.strip() for _, block in SH_BLOCK.findall(found) for line in block.splitlines()]


def as_run_here(line: str, work: Path, etc: Path) -> str:
    line = line.replace("sudo -u petsync ", "").replace("sudo ", "").replace("-o petsync ", "")
    return line.replace("/var/lib/petsync", str(work)).replace("/etc/petsync", str(etc))


def test_every_set_up_step_runs_as_written(tmp_path: Path) -> None:
    work, etc, home = tmp_path / "var-lib-petsync", tmp_path / "etc-petsync", tmp_path / "home"
    home.mkdir()
    work.mkdir()  # what step 2's useradd --create-home makes
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home)}
    skipped: list[str] = []
    outputs: list[str] = []

    for line in steps():
        if NOT_RUN.search(line):
            skipped.append(line)
            continue
        done = subprocess.run(
            ["bash", "-c", as_run_here(line, work, etc)],
            cwd=ROOT,  # the petsync checkout
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        assert done.returncode == 0, f"{line}\n{done.stdout}{done.stderr}"
        outputs.append(done.stdout)
        if line.endswith("/etc/petsync/env"):  # step 4: then add one NAME=value line per key
            (etc / "env").write_text(KEY_LINE, encoding="utf-8")

    assert len(skipped) == 5  # the venv, pip and pipx installs, useradd, crontab
    assert sorted(p.name for p in (work / "jobs").iterdir()) == [
        "bulk-import.toml",
        "nightly-export.toml",
    ]
    assert (work / "petsync.toml").is_file()
    assert (etc / "env").stat().st_mode & 0o777 == 0o600
    check = outputs[-1].splitlines()
    assert check[0] == "jobs/nightly-export.toml: export job 'nightly-export' is valid"
    assert "  API key       *** (hidden)  [PETSYNC_PRODUCTION_API_KEY]" in check
