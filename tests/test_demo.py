"""The demo: a week of a shelter's catalogue exported in-process, stopped like any export."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.core.errors import ConfigError, ExitCode, InputError, StoppedError
from petsync.core.stop import StopRequest
from petsync.demo import claim_folder, run_demo
from petsync.formats.snapshots import list_snapshots, load_snapshots
from petsync.history.diff import diff_snapshots
from petsync.history.load import load_history, transitions
from petsync.history.update import update_history

TODAY = dt.date(2026, 11, 22)
WEEK = [TODAY - dt.timedelta(days=n) for n in range(6, -1, -1)]


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "petsync-demo"
    run_demo(out, 300, today=TODAY)
    return out


def test_the_demo_exports_seven_nights_ending_today(week: Path) -> None:
    snapshots = list_snapshots(week)
    assert [s.date for s in snapshots] == WEEK
    assert all(s.trusted for s in snapshots)
    assert snapshots[0].pets == 300 and snapshots[-1].pets != 300


def test_the_demo_week_has_arrivals_adoptions_renames_and_departures(week: Path) -> None:
    first, last = list_snapshots(week)[-2:]
    d = diff_snapshots(first.path, last.path)
    assert d.added > 0 and d.removed > 0 and d.renamed > 0
    assert d.status_transitions.get(("available", "sold"), 0) > 0
    frame = load_snapshots(week)
    assert str(frame.snapshot_date.dtype) == "datetime64[ns]"
    assert frame.snapshot_date.dt.date.unique().tolist() == WEEK


def test_the_demo_history_has_transitions_and_a_pet_that_came_back(week: Path) -> None:
    update_history(week)
    versions = load_history(week)
    moves = transitions(versions)
    assert {"available -> sold", "available -> pending"} <= set(
        moves.from_status + " -> " + moves.to_status
    )
    rex = versions[versions.id == 1]
    # Gone on the second night, back on the fourth: two versions with a gap between them.
    assert rex.valid_from.dt.date.tolist()[:2] == [WEEK[0], WEEK[3]]
    assert rex.valid_to.dt.date.tolist()[0] == WEEK[1]


def test_a_stopped_demo_publishes_nothing_and_exits_with_the_signal(tmp_path: Path) -> None:
    stop = StopRequest()
    stop.request("SIGINT received", signal_number=2)
    with pytest.raises(StoppedError) as caught:
        run_demo(tmp_path / "demo", 120, stop=stop)
    assert caught.value.exit_code is ExitCode.INTERRUPTED
    assert list_snapshots(tmp_path / "demo") == []


def test_a_second_demo_replaces_the_first(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    run_demo(out, 50, nights=2, today=TODAY)
    update_history(out)

    run_demo(out, 60, nights=3, today=TODAY)

    assert [s.date for s in list_snapshots(out)] == WEEK[-3:]
    assert not (out / "history").exists()  # the first week's history would refuse this one
    assert list_snapshots(out)[0].pets == 60


def test_the_demo_leaves_a_folder_it_did_not_make_alone(tmp_path: Path) -> None:
    out = tmp_path / "exports"
    (out / "pets").mkdir(parents=True)

    with pytest.raises(InputError) as caught:
        run_demo(out, 10)

    assert str(caught.value) == (
        f"{out} holds pets that no demo made; pass out_dir= with a new folder (the demo "
        "replaces only its own)"
    )
    assert [p.name for p in out.iterdir()] == ["pets"]


def test_the_demo_command_ends_with_the_commands_that_show_the_week(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    result = CliRunner().invoke(cli, ["demo", "--pets", "40", "--nights", "3"])

    assert result.exit_code == 0, result.output
    nights = [list_snapshots("petsync-demo")[i].date for i in (1, 2)]
    assert result.stdout.endswith(
        "See what changed: the last night's diff, each pet's history and its report:\n"
        f"  petsync diff {nights[0]} {nights[1]} --dir petsync-demo\n"
        "  petsync history petsync-demo && petsync report petsync-demo    # then open "
        "petsync-demo/report.html\n"
        "  python -c 'import petsync; print(petsync.transitions(petsync.load_history("
        '"petsync-demo")))\'\n'
    )
    assert result.stdout.count("\nsnapshot ") + result.stdout.startswith("snapshot ") == 3


def test_the_commands_the_demo_prints_run_as_printed(tmp_path: Path) -> None:
    """After the demo, each command it prints runs in a shell and shows the week."""
    demo = CliRunner().invoke(
        cli, ["demo", "--pets", "60", "--nights", "3", "--out", str(tmp_path / "d")]
    )
    assert demo.exit_code == 0, demo.output
    commands = demo.stdout.rsplit("its report:\n", 1)[1].splitlines()
    shown = []
    for command in commands:
        line = command.strip().replace("petsync ", f"{sys.executable} -m petsync ")
        line = line.replace("python -c", f"{sys.executable} -c")
        done = subprocess.run(
            line, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, (command, done.stderr)
        shown.append(done.stdout)
    assert "added" in shown[0] and "report.html: 5 charts over 3 nights" in shown[1]
    assert "from_status" in shown[2] and "sold" in shown[2]


def test_a_link_at_the_demo_marker_is_refused_and_never_followed(tmp_path: Path) -> None:
    out = tmp_path / "petsync-demo"
    out.mkdir()
    victim = tmp_path / "victim"
    (out / ".petsync-demo").symlink_to(victim)  # dangling: following it would create it

    with pytest.raises(ConfigError, match=f"demo marker {out / '.petsync-demo'} is a symbolic"):
        claim_folder(out)
    assert not victim.exists()
