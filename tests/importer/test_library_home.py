"""The library's ``run_import`` keeps its journals where the command does: in the API's home.

A notebook user who imports the same file from two folders, under two names, creates its
rows once, against the real reference server. Journals an older petsync kept beside the
outputs are still found, and a dry run without a client touches no home.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig
from petsync.core.errors import ConfigError
from petsync.importer.config import ImportConfig
from petsync.importer.journal_home import journal_home
from petsync.importer.outcome import ImportReport
from petsync.importer.run import run_import
from petsync.server.runner import RunningServer
from tests.importer.doubles import InstantClient

StartServer = Callable[..., RunningServer]
NAMES = [f"Pet{i:02}" for i in range(12)]
ROWS = "name,categoryId\n" + "".join(f"{n},{i}\n" for i, n in enumerate(NAMES))


def imported(srv: RunningServer, config: ImportConfig) -> ImportReport:
    with PetstoreClient(ClientConfig(base_url=srv.base_url, api_key=srv.api_key)) as client:
        return run_import(config, client)


def test_the_same_file_from_two_folders_creates_its_rows_once(
    tmp_path: Path, petstore_server: StartServer, private_state_home: Path
) -> None:
    srv = petstore_server()
    monday = tmp_path / "monday" / "pets.csv"
    tuesday = tmp_path / "tuesday" / "pets from ann.csv"  # another folder, another name
    for path in (monday, tuesday):
        path.parent.mkdir()
        path.write_text(ROWS)

    first = imported(srv, ImportConfig(monday))
    again = imported(srv, ImportConfig(tuesday))

    assert (first.created, first.already_created) == (12, 0)
    assert (again.created, again.already_created, again.exit_code) == (0, 12, 0)
    assert Counter(p.name for p in srv.store.all()) == Counter(NAMES)  # each row once
    # One journal, in the API's home under XDG_STATE_HOME, none beside either output.
    home = journal_home(srv.base_url, None, {"XDG_STATE_HOME": str(private_state_home)}, tmp_path)
    assert first.files["journal"] == again.files["journal"]
    assert Path(first.files["journal"]).parent == home
    assert not list(tmp_path.rglob(".petsync"))
    # The second folder's accepted file lists the rows, with the ids the first run got.
    accepted = (tuesday.parent / "pets from ann.accepted.csv").read_text()
    assert all(name in accepted for name in NAMES)


def test_a_journal_an_older_petsync_kept_beside_the_outputs_is_still_honoured(
    tmp_path: Path, petstore_server: StartServer, private_state_home: Path
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text(ROWS)
    home_journal = Path(imported(srv, ImportConfig(path)).files["journal"])
    legacy = tmp_path / ".petsync" / "journals"  # where an older petsync kept it
    legacy.mkdir(parents=True)
    shutil.move(home_journal, legacy / home_journal.name)

    again = imported(srv, ImportConfig(path))

    assert (again.created, again.already_created) == (0, 12)
    assert again.files["journal"] == str(legacy / home_journal.name)
    assert not home_journal.exists()  # the home was not used: no second journal
    assert srv.store.count() == 12


def test_a_dry_run_without_a_client_reads_the_output_folder_and_touches_no_home(
    tmp_path: Path, private_state_home: Path
) -> None:
    path = tmp_path / "pets.csv"
    path.write_text(ROWS)
    report = run_import(ImportConfig(path, dry_run=True))
    assert (report.would_send, report.exit_code) == (12, 0)
    assert list(private_state_home.iterdir()) == []


def test_a_client_without_a_base_url_is_told_to_name_the_home_and_sends_nothing(
    tmp_path: Path,
) -> None:
    class Wrapper(InstantClient):  # a caller's wrapper that does not pass base_url on
        base_url = ""

    path = tmp_path / "pets.csv"
    path.write_text(ROWS)
    client = Wrapper()
    with pytest.raises(ConfigError, match=r"no base_url.*ImportConfig\(journal_home=\.\.\.\)"):
        run_import(ImportConfig(path), client)
    assert client.calls == 0
    home = tmp_path / "journals"
    report = run_import(ImportConfig(path, journal_home=home), client)
    assert report.created == 12 and Path(report.files["journal"]).parent == home
