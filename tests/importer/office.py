"""LibreOffice as staff use it, for the tests: ``soffice --headless --convert-to``.

Every conversion runs with a private profile (the user's is never touched, and two runs
never share one) and a timeout. Tests that need it skip with the reason when it is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SOFFICE = shutil.which("soffice")
needs_soffice = pytest.mark.skipif(
    SOFFICE is None,
    reason="LibreOffice is not installed (apt-get install libreoffice-calc-nogui)",
)
TIMEOUT = 120  # seconds: a first start builds the profile


def convert(source: Path, to: str, out_dir: Path, *, infilter: str | None = None) -> Path:
    """``source`` converted by LibreOffice to ``to`` (``xlsx``, ``ods``, ``csv:...``)."""
    assert SOFFICE is not None
    profile = out_dir / ".lo-profile"
    command = [
        SOFFICE,
        f"-env:UserInstallation={profile.resolve().as_uri()}",
        "--headless",
        "--norestore",
        "--convert-to",
        to,
        "--outdir",
        str(out_dir),
        str(source),
    ]
    if infilter is not None:
        command.insert(-1, f"--infilter={infilter}")
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    suffix = to.split(":", 1)[0]
    result = out_dir / f"{source.stem}.{suffix}"
    assert done.returncode == 0 and result.exists(), (done.stdout, done.stderr)
    return result
