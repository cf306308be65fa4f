"""Each pet's history: the snapshots folded into one table of versions (SCD type 2).

One row per version of a pet: its content (``name``, ``categoryId``, ``status``), a 64-bit
``hash`` of that content, ``valid_from`` (the snapshot date the version was first seen) and
``valid_to`` (the snapshot date it was first seen changed or gone; null while current).

- :mod:`petsync.history.table`: the table's schema, its nights, the files on disk.
- :mod:`petsync.history.content_hash`: the hash of a version's content.
- :mod:`petsync.history.night_batches`: a night's pets read in id order, in bounded pieces.
- :mod:`petsync.history.id_order`: sorted runs spilled to a scratch file and merged.
- :mod:`petsync.history.status_codes`: statuses as codes, one dictionary for an update.
- :mod:`petsync.history.read_ahead`: pieces read ahead on a thread of their own.
- :mod:`petsync.history.row_groups`: the open versions written in even row groups.
- :mod:`petsync.history.fold`: one night merged with the open versions (the rules).
- :mod:`petsync.history.update`: :func:`update_history`, incremental or from scratch.
- :mod:`petsync.history.load`: :func:`load_history` (``as_of``) and :func:`transitions`.
"""
