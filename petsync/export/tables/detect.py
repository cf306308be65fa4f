"""Which table format ``OUT`` holds: a Delta table, petsync's Iceberg table, or neither
(dated Parquet folders).

Every reader of snapshots asks this first, so it stays light: answering must not load the
table writers (deltalake, pyiceberg and the export's pipeline behind them), which would
cost a reader of Parquet folders a third of a second for nothing.
"""

from __future__ import annotations

from petsync.storage.layout import PETS_DIR
from petsync.storage.location import Location

CATALOG_FILE = "_iceberg_catalog.db"  # the local Iceberg catalog, in OUT


def is_delta(location: Location) -> bool:
    """True when ``OUT/pets`` holds a Delta table (its ``_delta_log`` exists)."""
    return _is_folder(location, "_delta_log")


def is_iceberg(location: Location) -> bool:
    """True when OUT holds petsync's Iceberg table (its catalog file, or ``pets/metadata``)."""
    if location.local is not None:
        return (location.local / CATALOG_FILE).is_file()
    return _is_folder(location, "metadata")


def _is_folder(location: Location, name: str) -> bool:
    import pyarrow.fs as pafs

    from petsync.storage.filesystem import open_filesystem

    try:
        info = open_filesystem(location).get_file_info(location.store_child(PETS_DIR, name))
    except OSError:
        return False
    return bool(info.type == pafs.FileType.Directory)
