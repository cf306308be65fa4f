"""``petsync history`` through click's CliRunner: output, --json, --rebuild, exit codes."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from click.testing import CliRunner

from petsync.cli import cli
from tests.export.published import publish_snapshot

DAY1, DAY2 = dt.date(2026, 11, 21), dt.date(2026, 11, 22)


def test_history_prints_each_night_and_the_table(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, DAY1, [(1, "Rex", 1, "available"), (2, "Tom", 1, None)])
    publish_snapshot(tmp_path, DAY2, [(1, "Rex", 1, "sold")], complete=False)

    result = CliRunner().invoke(cli, ["history", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "2026-11-21  complete     2 pets: 2 added, 0 changed, 0 removed",
        "2026-11-22  incomplete   1 pet: 0 added, 1 changed, 0 removed, 1 missing kept open",
        f"{tmp_path / 'history'}: rebuilt, 3 versions, 2 current, last night 2026-11-22",
    ]


def test_history_again_is_up_to_date_and_json_says_so(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, DAY1, [(1, "Rex", 1, "available")])
    CliRunner().invoke(cli, ["history", str(tmp_path)])

    result = CliRunner().invoke(cli, ["history", str(tmp_path), "--json"])

    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["nights"], report["versions"], report["rebuilt"]) == ([], 1, False)


def test_a_late_snapshot_exits_2_and_rebuild_takes_it(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, DAY2, [(1, "Rex", 1, "sold")])
    CliRunner().invoke(cli, ["history", str(tmp_path)])
    publish_snapshot(tmp_path, DAY1, [(1, "Rex", 1, "available")])

    refused = CliRunner().invoke(cli, ["history", str(tmp_path)])
    rebuilt = CliRunner().invoke(cli, ["history", str(tmp_path), "--rebuild"])

    assert refused.exit_code == 2
    assert "the snapshot of 2026-11-21 is older than the history's last night" in refused.stderr
    assert rebuilt.exit_code == 0
    assert rebuilt.stdout.splitlines()[-1].endswith(
        "rebuilt, 2 versions, 1 current, last night 2026-11-22"
    )


def test_no_snapshots_exits_2_naming_the_export(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["history", str(tmp_path)])

    assert result.exit_code == 2
    assert f"no snapshots under {tmp_path / 'pets'}; an export with --out {tmp_path} wr" in (
        result.stderr
    )


def test_a_link_at_the_lock_file_is_refused_and_never_followed(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, DAY1, [(1, "Rex", 1, "available")])
    victim = tmp_path / "elsewhere" / "authorized_keys"
    victim.parent.mkdir()
    (tmp_path / ".history.lock").symlink_to(victim)  # dangling: opening it would create it

    result = CliRunner().invoke(cli, ["history", str(tmp_path)])

    assert result.exit_code == 2, result.output
    assert f"history lock file {tmp_path / '.history.lock'} is a symbolic link" in result.stderr
    assert not victim.exists() and not (tmp_path / "history").exists()
