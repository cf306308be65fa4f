"""The export job: every listing of the catalogue into one dated, typed snapshot.

``run`` (run_export: lock, fetch, deduplicate, publish), ``config`` (ExportConfig),
``fetch`` (the concurrent listings of one export), ``collector`` and ``dedup`` (rows
spilled to disk and deduplicated; ``scratch``, the spill files), ``deduplicated`` (the
winners, written out) and ``tallies`` (what was counted), ``quarantine`` (records that break
the interface), ``extra_fields`` (fields beyond the interface's), ``schema`` (the one Arrow
schema), ``clock`` (our clock against the API's), ``report`` (ExportReport, the drop check
and the manifest), ``snapshot`` (reading: find, list, load), ``tables/`` (Delta and Iceberg
instead of dated folders) and ``diff``. Where a snapshot is written, locked and published
(a local directory or an object store) is :mod:`petsync.storage`. The imports run one way:
``run`` at the top, ``config`` at the bottom. These modules load pyarrow; import them only
where tables are made (``config`` alone stays light, for the command line).
"""
