"""Where snapshots and histories live: the floor the export and the history stand on.

``location`` (a local path or an object-store URI, parsed once), ``layout`` (the names of
the files every writer and reader shares), ``credentials`` (which GCS or Azure credentials
and endpoint a run uses), ``filesystem`` (the pyarrow file system of a location, the
reachability check and the translation of store errors) and ``store_calls`` (store steps in
a worker thread, so signals act while a call blocks), ``partitions`` (which dated
partitions are published), ``local_publication`` (staged aside, one rename into place) and
``object_publication`` (staged, server-side copies with the manifest last, roll-back of a
run that died, pruning). Nothing here knows a job: no module
imports ``export``, ``history`` or ``importer``.
"""
