"""The demo: a week of a shelter's catalogue, exported night by night from a seeded server.

``petsync demo`` is the README's first command: it needs no server, no key and no network
beyond 127.0.0.1. It starts the reference server in-process, seeded with ``pets`` pets, and
exports it as the nightly job would, once for each of ``nights`` nights ending today (the
dates are given to the export: nothing waits for a real night). Between two nights the
shelter's catalogue changes the way a shelter's does (:func:`shelter_night`): pets arrive,
some are adopted (sold) and leave a few nights later, some are reserved (pending) or put
back, a few are renamed, and one pet leaves and comes back. So ``petsync diff``,
``petsync history``, ``transitions()`` and ``petsync report`` all have something to show
right after it.
"""

from __future__ import annotations

import datetime as dt
import random
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.errors import InputError
from petsync.core.files import atomic_write_text
from petsync.core.models import NewPet, PetStatus
from petsync.core.settings_table import DEMO_OUT
from petsync.core.stop import StopRequest
from petsync.export.config import ExportConfig
from petsync.export.fetch import ExportProgress
from petsync.export.outcome import ExportReport
from petsync.export.run import run_export
from petsync.server.faults import Faults
from petsync.server.seed import seed_row
from petsync.server.store import PetStore, Row

DEFAULT_DEMO_PETS = 10_000
DEFAULT_DEMO_NIGHTS = 7
DEFAULT_DEMO_DIR = Path("petsync-demo")
DEMO_MARK = ".petsync-demo"  # in OUT: the folder is the demo's, and a new demo may replace it

# Each night, as a share of the pets concerned (a shelter's week, roughly).
ARRIVALS = 0.03  # of the catalogue: new pets, available
ADOPTIONS = 0.04  # of pets available or pending: sold
RESERVATIONS = 0.03  # of pets available: pending
RETURNS = 0.2  # of pets pending: available again
RENAMES = 0.005  # of the catalogue
DEPARTURES = 0.15  # of pets sold: they leave the catalogue
NEW_NAMES = ("Ziggy", "Mochi", "Hazel", "Juno", "Olive", "Pip", "Rocky", "Sunny")


@dataclass(frozen=True)
class DemoReport:
    """Each night's export (oldest first) and the folder they are in."""

    exports: tuple[ExportReport, ...]
    out_dir: Path

    @property
    def export(self) -> ExportReport:
        """The last night's export."""
        return self.exports[-1]

    @property
    def pandas_line(self) -> str:
        return pandas_line(self.out_dir)

    @property
    def duckdb_line(self) -> str:
        return duckdb_line(self.out_dir)

    @property
    def next_commands(self) -> list[str]:
        """The commands that show what the week did."""
        return next_commands(self.out_dir, [e.snapshot_date for e in self.exports])


def pandas_line(out_dir: Path) -> str:
    """The one line that reads every snapshot under ``out_dir`` into pandas."""
    return f'import petsync; df = petsync.load_snapshots("{out_dir.as_posix()}")'


def duckdb_line(out_dir: Path) -> str:
    """The one line that queries every snapshot under ``out_dir`` with DuckDB."""
    return (
        'import duckdb; duckdb.sql("SELECT snapshot_date, status, count(*) AS pets FROM '
        f"read_parquet('{out_dir.as_posix()}/pets/*/*.parquet', hive_partitioning=true) "
        'GROUP BY ALL ORDER BY ALL").show()'
    )


def next_commands(out_dir: Path, dates: list[dt.date]) -> list[str]:
    """What to run after the demo: the last night's diff, the history and its report."""
    out = out_dir.as_posix()
    lines = []
    if len(dates) > 1:
        lines.append(f"petsync diff {dates[-2]} {dates[-1]} --dir {out}")
    lines.append(f"petsync history {out} && petsync report {out}    # then open {out}/report.html")
    lines.append(
        f"python -c 'import petsync; print(petsync.transitions(petsync.load_history(\"{out}\")))'"
    )
    return lines


def run_demo(
    out_dir: Path = DEFAULT_DEMO_DIR,
    pets: int = DEFAULT_DEMO_PETS,
    *,
    nights: int = DEFAULT_DEMO_NIGHTS,
    today: dt.date | None = None,
    progress: ExportProgress | None = None,
    stop: StopRequest | None = None,
    extra_fields: bool = False,
) -> DemoReport:
    """Export a seeded reference server into ``out_dir`` on ``nights`` nights ending ``today``
    (UTC by default), the catalogue changing between them (:func:`shelter_night`).

    ``out_dir`` must be new, empty, or an earlier demo's (which is replaced). ``stop`` (a
    signal) ends the running export as it ends any: that night is not published, and no
    later night is exported. With ``extra_fields`` the server sends fields beyond the
    interface's (:mod:`petsync.server.extra_fields`) and the export keeps them as columns.
    """
    from petsync.server.app import ServerConfig
    from petsync.server.runner import start_server

    if nights < 1:
        raise InputError(f"the demo needs at least one night, got {nights}")
    last = today or dt.datetime.now(dt.UTC).date()
    dates = [last - dt.timedelta(days=n) for n in range(nights - 1, -1, -1)]
    claim_folder(out_dir)
    key = ApiKey("demo-" + secrets.token_urlsafe(16))
    faults = Faults(extra_fields=extra_fields)
    rng = random.Random(20261122)  # the same week every time
    exports = []
    with start_server(ServerConfig(api_key=key, seed_pets=pets, faults=faults)) as server:
        config = ExportConfig(
            client=ClientConfig(server.base_url, server.api_key),
            out_dir=out_dir,
            # A night of the demo may hold fewer pets than the one before (adopted pets
            # leave): only an empty export is worth flagging here.
            max_drop=1.0,
            extra_fields="keep" if extra_fields else "drop",
        )
        for number, date in enumerate(dates):
            if number:
                shelter_night(server.store, rng, number)
            exports.append(run_export(config, today=date, progress=progress, stop=stop))
    return DemoReport(exports=tuple(exports), out_dir=out_dir)


def claim_folder(out_dir: Path) -> None:
    """Make ``out_dir`` the demo's: new or empty, or an earlier demo's, whose snapshots,
    history and report are removed (its dates would clash with this week's)."""
    if not out_dir.exists():
        out_dir.mkdir(parents=True)
        atomic_write_text(out_dir / DEMO_MARK, "", what="demo marker")  # never through a link
        return
    if not out_dir.is_dir():
        raise InputError(f"{out_dir} is not a folder; pass " + DEMO_OUT + " with a new folder")
    ours = (out_dir / DEMO_MARK).exists()
    held = [p.name for p in out_dir.iterdir() if p.name in ("pets", "history")]
    if held and not ours:
        raise InputError(
            f"{out_dir} holds {' and '.join(held)} that no demo made; pass "
            + DEMO_OUT
            + " with a new folder (the demo replaces only its own)"
        )
    for name in held:
        shutil.rmtree(out_dir / name)
    (out_dir / "report.html").unlink(missing_ok=True)
    atomic_write_text(out_dir / DEMO_MARK, "", what="demo marker")  # never through a link


def shelter_night(store: PetStore, rng: random.Random, night: int) -> None:
    """One day of a shelter between two exports: arrivals, adoptions, reservations and
    their returns, renames, adopted pets leaving; on the second night the oldest pet leaves,
    and it comes back on the fourth (the same id, as after a mistaken removal)."""

    pets = store.all()
    by_status: dict[str | None, list[Row]] = {}
    for pet in pets:
        by_status.setdefault(pet.status, []).append((pet.id, pet.name, pet.categoryId, pet.status))

    def some(rows: list[Row], share: float) -> list[Row]:
        return rng.sample(rows, round(len(rows) * share)) if rows else []

    changed: dict[int, Row] = {}
    for pet_id, name, category, _ in some(by_status.get("pending", []), RETURNS):
        changed[pet_id] = (pet_id, name, category, "available")
    for pet_id, name, category, _ in some(by_status.get("available", []), RESERVATIONS):
        changed[pet_id] = (pet_id, name, category, "pending")
    waiting = by_status.get("available", []) + by_status.get("pending", [])
    for pet_id, name, category, _ in some(waiting, ADOPTIONS):
        changed[pet_id] = (pet_id, name, category, "sold")
    everyone = [(p.id, p.name, p.categoryId, p.status) for p in pets]
    for pet_id, name, category, status in some(everyone, RENAMES):
        pet_id, _, category, status = changed.get(pet_id, (pet_id, name, category, status))
        changed[pet_id] = (pet_id, f"{rng.choice(NEW_NAMES)} (was {name})", category, status)
    store.update_many(changed.values())
    leaving = [row[0] for row in some(by_status.get("sold", []), DEPARTURES)]
    store.delete_many(leaving)
    for _ in range(round(len(pets) * ARRIVALS)):
        store.create(NewPet(rng.choice(NEW_NAMES), rng.randint(1, 5), PetStatus.AVAILABLE))
    if pets and night == 1:
        store.delete_many([pets[0].id])
    if pets and night == 3 and store.get(1) is None:
        store.insert_many([seed_row(1)])  # the oldest pet, back under its own id
