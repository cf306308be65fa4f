"""Which allocator Arrow uses in the commands that move a catalogue's worth of columns.

pyarrow allocates with mimalloc unless ``ARROW_DEFAULT_MEMORY_POOL`` says otherwise, and
mimalloc keeps what Python and Arrow's threads free in pages it rarely hands back: freed
pieces are made on one thread and freed on another, all night long. glibc's malloc reuses
them. Measured (peak RSS, whole processes, docs/history.md): an export of 1,000,000 pets
about 50 MiB lower; one night's history update 50 to 110 MiB lower (5,000,000 to
20,000,000 pets, beside dated folders, Delta or Iceberg), the rebuild about 60 MiB and the
report 70 MiB lower. The update spends 5 to 10% more CPU over dated folders and small
Delta tables; the rest take the same time or less. ``petsync diff`` peaked higher with
malloc (314 against 261 MiB at 5,000,000 pets) and keeps Arrow's default.
"""

from __future__ import annotations

import os

POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"
POOL = "system"  # malloc


def prefer_system_allocator() -> None:
    """Let Arrow allocate with malloc, unless the user chose otherwise.

    Arrow reads the variable once, when its default pool is first asked for: so before the
    command's modules load pyarrow.
    """
    os.environ.setdefault(POOL_VARIABLE, POOL)
