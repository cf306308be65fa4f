"""update_history: incremental equals rebuild, re-running changes nothing, late nights refused."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from petsync.core.errors import ConfigError, ExitCode, InputError
from petsync.core.wording import COMMAND_LINE
from petsync.history.load import load_history
from petsync.history.table import history_dir
from petsync.history.update import is_trusted, update_history
from petsync.storage.layout import MANIFEST_NAME, SnapshotInfo
from tests.export.published import publish_snapshot
from tests.history.nights import START, random_nights


@pytest.mark.parametrize("seed", [1, 2, 3], ids=["seed1", "seed2", "seed3"])
def test_incremental_updates_equal_a_rebuild(tmp_path: Path, seed: int) -> None:
    step, whole = tmp_path / "step", tmp_path / "whole"
    for date, rows, complete in random_nights(seed, nights=12, pets=40):
        publish_snapshot(step, date, rows, complete=complete)
        publish_snapshot(whole, date, rows, complete=complete)
        if date.day % 3:  # sometimes one night at a time, sometimes several
            update_history(step)
    update_history(step)
    update_history(whole, rebuild=True)

    incremental, rebuilt = load_history(step), load_history(whole)
    assert incremental.equals(rebuilt)
    assert (
        json.loads((history_dir(step) / "_history.json").read_text())["nights"]
        == json.loads((history_dir(whole) / "_history.json").read_text())["nights"]
    )


def test_rerunning_changes_nothing(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, START, [(1, "a", 1, "sold")])
    update_history(tmp_path)
    files = {p.name: p.read_bytes() for p in history_dir(tmp_path).iterdir()}

    report = update_history(tmp_path)

    assert report.nights == () and report.versions == 1 and report.current == 1
    assert {p.name: p.read_bytes() for p in history_dir(tmp_path).iterdir()} == files


def test_unchanged_pets_stay_one_row(tmp_path: Path) -> None:
    for n in range(5):
        publish_snapshot(
            tmp_path, START + dt.timedelta(days=n), [(1, "a", 1, None), (2, "b", 1, "sold")]
        )
    report = update_history(tmp_path)
    assert report.versions == 2
    assert [n.opened for n in report.nights] == [2, 0, 0, 0, 0]


def test_a_late_snapshot_is_refused_with_the_fix(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, START + dt.timedelta(days=2), [(1, "a", 1, "sold")])
    update_history(tmp_path)
    publish_snapshot(tmp_path, START + dt.timedelta(days=1), [(1, "a", 1, "sold")])

    with pytest.raises(InputError) as caught:
        update_history(tmp_path)

    assert str(caught.value) == (
        "the snapshot of 2026-01-02 is older than the history's last night (2026-01-03) and "
        f"not in it; rebuild the history from the snapshots kept with `update_history("
        f"{str(tmp_path)!r}, rebuild=True)`"
    )
    assert caught.value.render(COMMAND_LINE).endswith(f"`petsync history {tmp_path} --rebuild`")
    assert update_history(tmp_path, rebuild=True).last_date == START + dt.timedelta(days=2)
    assert len(load_history(tmp_path)) == 1


def test_files_a_killed_run_left_are_removed_and_never_read(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, START, [(1, "a", 1, "sold")])
    update_history(tmp_path)
    stray = history_dir(tmp_path) / "closed-2026-01-05.parquet"
    stray.write_bytes(b"left by a killed run")
    assert len(load_history(tmp_path)) == 1  # the state names the files of the table

    update_history(tmp_path)

    assert not stray.exists()


def test_as_of_before_the_first_night_is_refused(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, START, [(1, "a", 1, "sold")])
    update_history(tmp_path)
    with pytest.raises(InputError, match="starts on 2026-01-01; as_of=2025-12-31 is before it"):
        load_history(tmp_path, as_of="2025-12-31")


def test_no_history_names_the_command_that_builds_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no history at .*history; `petsync history "):
        load_history(tmp_path)


@pytest.mark.parametrize(
    ("manifest", "trusted"),
    [
        ({"complete": True}, True),
        ({"complete": False}, False),
        ({"complete": True, "drop_check": {"flagged": True}}, False),
        ({"complete": True, "drop_check": {"flagged": False}}, True),
    ],
    ids=["complete", "incomplete", "drop-flagged", "drop-checked"],
)
def test_only_an_exit_0_night_is_trusted(manifest: dict[str, object], trusted: bool) -> None:
    assert is_trusted(SnapshotInfo(START, Path("x"), manifest)) is trusted


def test_a_drop_flagged_night_closes_nothing(tmp_path: Path) -> None:
    publish_snapshot(tmp_path, START, [(1, "a", 1, "sold"), (2, "b", 1, "sold")])
    second = publish_snapshot(tmp_path, START + dt.timedelta(days=1), [(1, "a", 1, "sold")])
    manifest = json.loads((second / MANIFEST_NAME).read_text())
    manifest["drop_check"] = {"flagged": True}
    (second / MANIFEST_NAME).write_text(json.dumps(manifest))

    report = update_history(tmp_path)

    assert [(n.removed, n.kept, n.drop_flagged) for n in report.nights] == [
        (0, 0, False),
        (0, 1, True),
    ]
    assert load_history(tmp_path).valid_to.isna().all()


def test_small_pieces_give_the_same_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import petsync.history.table as table

    whole, pieces = tmp_path / "whole", tmp_path / "pieces"
    for date, rows, complete in random_nights(4, nights=8, pets=40):
        publish_snapshot(whole, date, rows, complete=complete)
        publish_snapshot(pieces, date, rows, complete=complete)
        update_history(whole)
        monkeypatch.setattr(table, "PIECE_ROWS", 3)  # pieces of 3 versions, edges everywhere
        update_history(pieces)
        monkeypatch.undo()

    assert load_history(pieces).equals(load_history(whole))


def test_hash_is_the_documented_blake2b_of_the_json_content(tmp_path: Path) -> None:
    import hashlib

    odd = 'Q "x" \\ \t\u2028'  # what JSON escapes (quote, backslash, tab) and what it keeps
    publish_snapshot(
        tmp_path,
        START,
        [(1, "Rex", 1, "sold"), (2, "Mia 🐈", 2, None), (3, odd, -4, 'on "hold"')],
    )
    update_history(tmp_path)

    def documented(content: list[object]) -> int:
        text = json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()
        return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big", signed=True)

    history = load_history(tmp_path)
    assert history.hash.tolist() == [
        documented(["Rex", 1, "sold"]),
        documented(["Mia 🐈", 2, None]),
        documented([odd, -4, 'on "hold"']),
    ]


def test_a_history_whose_files_have_names_without_generation_keeps_updating(
    tmp_path: Path,
) -> None:
    nights = random_nights(7, nights=4, pets=20)
    for date, rows, complete in nights[:3]:
        publish_snapshot(tmp_path, date, rows, complete=complete)
    update_history(tmp_path)
    folder = history_dir(tmp_path)
    state = json.loads((folder / "_history.json").read_text())
    renamed = []
    for name in state["closed_files"]:  # closed-DATE-GEN.parquet -> closed-DATE.parquet
        plain = name.rsplit("-", 1)[0] + ".parquet"
        (folder / name).rename(folder / plain)
        renamed.append(plain)
    state["closed_files"] = renamed
    assert renamed  # the nights closed something: there are files to rename
    (folder / "_history.json").write_text(json.dumps(state))
    date, rows, complete = nights[3]
    publish_snapshot(tmp_path, date, rows, complete=complete)

    update_history(tmp_path)
    incremental = load_history(tmp_path)

    assert set(renamed) <= {p.name for p in folder.iterdir()}  # still named, still kept
    update_history(tmp_path, rebuild=True)
    assert incremental.equals(load_history(tmp_path))
    assert not set(renamed) & {p.name for p in folder.iterdir()}  # the rebuild replaced them


def test_a_night_dated_ahead_waits_and_never_blocks_the_real_nights(tmp_path: Path) -> None:
    # A snapshot a wrong clock dated far ahead: folding it would make every real night after
    # it "older than the history's last night" and refused.
    ahead = dt.date(2100, 1, 1)
    publish_snapshot(tmp_path, START, [(1, "a", 1, "sold")])
    publish_snapshot(tmp_path, ahead, [(1, "a", 1, "sold")])
    assert update_history(tmp_path).last_date == START

    publish_snapshot(tmp_path, START + dt.timedelta(days=1), [(1, "b", 1, "sold")])
    report = update_history(tmp_path)

    assert report.last_date == START + dt.timedelta(days=1)
    assert sorted(load_history(tmp_path)["name"]) == ["a", "b"]


def test_an_update_loads_neither_pandas_nor_the_table_writers(tmp_path: Path) -> None:
    """pandas (pulled in by pyarrow's to_numpy(), pa.scalar() and pq.read_table()),
    deltalake and httpx cost an update a third of a second it does not need."""
    import subprocess
    import sys

    nights = random_nights(5, nights=4, pets=40)
    assert not all(complete for _, _, complete in nights)  # an untrusted night too
    for date, rows, complete in nights:  # not in id order, as an export writes them
        publish_snapshot(tmp_path, date, rows[::-1], complete=complete)
    script = (
        "import sys\n"
        "from petsync.history.update import update_history\n"
        f"report = update_history({str(tmp_path)!r})\n"
        "print(len(report.nights), sorted(m for m in ('pandas', 'deltalake', 'httpx', "
        "'pyiceberg') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["4", "[]"]


@pytest.mark.parametrize("dangling", [False, True])
def test_a_link_at_the_history_folder_is_refused_and_nothing_lands_where_it_points(
    tmp_path: Path, dangling: bool
) -> None:
    # A link planted at OUT/history would have the update write (and remove) its files in
    # whatever folder it points to; a dangling one was an internal error (issue 29).
    out = tmp_path / "out"
    publish_snapshot(out, START, [(1, "a", 1, "sold")])
    target = tmp_path / "elsewhere"
    if not dangling:
        target.mkdir()
        (target / "keep.txt").write_text("mine\n")
    history_dir(out).symlink_to(target, target_is_directory=True)

    with pytest.raises(ConfigError) as caught:
        update_history(out)

    assert caught.value.exit_code is ExitCode.USAGE
    assert str(caught.value).startswith(
        f"history folder {history_dir(out)} is a symbolic link, not a folder; petsync "
    )
    assert "remove it (a run re-creates the folder)" in str(caught.value)
    assert history_dir(out).is_symlink()
    if dangling:
        assert not target.exists()
    else:
        assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]
