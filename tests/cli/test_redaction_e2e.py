"""The key never leaves its object: a full export and import, then every byte scanned.

The runs use a distinctive key, debug-level JSON and text logs, metrics, reports, a run the
API refuses (the canary sent as a wrong key) and ``config show`` / ``run --check``; afterwards
every file under the working directory (snapshots, manifest, quarantine, journal, CSVs,
report, metrics, logs) and everything printed is searched for the key.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.core.apikey import ApiKey
from petsync.server.runner import RunningServer

CANARY = "sk-REDACTION-CANARY-12345"
CSV = (
    "name,categoryId,status,notes\n"
    "Rex,1,available,fine\n"
    "Mia,2,,fine\n"
    ",3,sold,no name: rejected locally\n"
    "Bo,99999999999999999999,sold,out of range: rejected locally\n"
)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)  # the journals: under HOME, scanned
    for name in ("PETSYNC_API_KEY", "PETSYNC_BASE_URL", "PETSYNC_PRODUCTION_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return root


def scan(root: Path) -> list[Path]:
    """Files under root holding the canary, as text or bytes (Parquet included)."""
    needle = CANARY.encode()
    return [p for p in sorted(root.rglob("*")) if p.is_file() and needle in p.read_bytes()]


def test_key_appears_in_no_output_log_report_or_file(
    work: Path, petstore_server: Callable[..., RunningServer]
) -> None:
    srv = petstore_server(api_key=ApiKey(CANARY), seed_pets=60)
    (work / "petsync.toml").write_text(
        f'[environments.production]\nbase_url = "{srv.base_url}"\n', encoding="utf-8"
    )
    (work / "metrics").mkdir()
    (work / "pets.csv").write_text(CSV, encoding="utf-8")
    runner = CliRunner()
    env = {"PETSYNC_PRODUCTION_API_KEY": CANARY}
    printed: list[str] = []

    def invoke(args: list[str], environ: dict[str, str] = env) -> Result:
        result = runner.invoke(cli, args, env=environ)
        printed.extend([result.stdout, result.stderr, repr(result.exception)])
        return result

    debug_json = ["--log-format", "json", "--log-level", "debug"]
    export = invoke(
        [*debug_json, "export", "--out", "snaps", "--metrics-file", "metrics/export.prom"]
    )
    assert export.exit_code == 0, export.output
    export_text = invoke(["--log-level", "debug", "export", "--out", "snaps", "--keep", "1"])
    assert export_text.exit_code == 0, export_text.output
    imported = invoke(
        [
            *debug_json,
            "import",
            "pets.csv",
            "--out-dir",
            "out",
            "--report",
            "out/report.json",
            "--metrics-file",
            "metrics/import.prom",
        ]
    )
    assert imported.exit_code == 4, imported.output  # two rows rejected locally
    assert srv.store.count() == 62
    assert invoke(["config", "show"]).exit_code == 0
    assert invoke(["--log-level", "debug", "check"]).exit_code == 0

    # The canary as a key the server does not know: the refusal must not quote it back.
    other = petstore_server(api_key=ApiKey("the-server-knows-another-key"))
    refused_env = {"PETSYNC_BASE_URL": other.base_url, "PETSYNC_API_KEY": CANARY}
    refused = invoke([*debug_json, "export", "--out", "refused"], refused_env)
    assert refused.exit_code == 3
    refused_text = invoke(
        ["--log-level", "debug", "import", "pets.csv", "--out-dir", "r"], refused_env
    )
    assert refused_text.exit_code == 3

    key_file = work.parent / "key"
    key_file.write_text(CANARY)
    key_file.chmod(0o600)
    shown = invoke(["config", "show", "--api-key-file", str(key_file)], {})
    assert shown.exit_code == 0 and "*** (hidden)" in shown.stdout

    written = sorted(p.relative_to(work).as_posix() for p in work.rglob("*") if p.is_file())
    assert any(name.endswith("_manifest.json") for name in written)
    assert any(name.endswith("pets.parquet") for name in written)
    assert {"out/report.json", "metrics/export.prom", "metrics/import.prom"} <= set(written)
    state = work.parent / "home" / ".local" / "state"  # the import journal, in its home
    assert any(state.rglob("petsync/journals/*/*.jsonl"))
    assert any('"level": "debug"' in text or '"level": "info"' in text for text in printed)
    assert scan(work.parent) == [key_file]  # the scan does find the key where it is kept
    assert scan(work) == []
    assert [text for text in printed if CANARY in text] == []
