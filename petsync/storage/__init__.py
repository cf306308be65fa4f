"""Where snapshots and histories live: the floor the export and the history stand on.

``location`` (a local path or an object-store URI, parsed once), ``layout`` (the names of
the files every writer and reader shares), ``credentials`` (which GCS or Azure credentials
and endpoint a run uses), ``filesystem`` (the pyarrow file system of a location, the
reachability check and the translation of store errors), ``store_calls`` (store steps in a
worker thread, so signals act while a call blocks), ``partitions`` (which dated partitions
are published), ``lock`` (the run lock's one shape, with its local ``flock`` and its
object-store conditional create; each store's conditional writes in ``s3_lock_object``,
``gcs_lock_object`` and ``azure_lock_object``), ``local_publication`` (staged aside, one
rename into place), ``object_publication`` (staged, server-side copies with the manifest
last, roll-back of a run that died, pruning) and ``store`` (one interface over a local
directory and an object-store prefix). Nothing here knows a job: no module imports
``export``, ``history`` or ``importer``.
"""
