"""ExportConfig: what job files and the CLI may give, and what they may not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from petsync.client.config import ClientConfig
from petsync.core.errors import ConfigError
from petsync.core.models import PetStatus
from petsync.export.config import ExportConfig
from tests.export.scripted import BASE


def test_statuses_may_be_given_as_strings(tmp_path: Path) -> None:
    config = ExportConfig(
        client=ClientConfig(BASE, None), out_dir=tmp_path, statuses=("sold", "sold", "pending")
    )

    assert config.statuses == (PetStatus.SOLD, PetStatus.PENDING)


def test_unknown_status_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match="unknown status 'lost'; use one of: available, pending, sold"
    ):
        ExportConfig(client=ClientConfig(BASE, None), out_dir=tmp_path, statuses=("lost",))


def test_export_config_loads_no_pyarrow_or_pandas() -> None:
    # The CLI reads its choices from here; it must stay fast to import.
    script = (
        "import sys, petsync.export.config; "
        "print(sorted({'pyarrow', 'pandas', 'numpy'} & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"
