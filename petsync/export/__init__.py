"""The export job: every listing of the catalogue into one dated, typed snapshot.

``run`` (run_export: lock, fetch, deduplicate, publish), ``config`` (ExportConfig),
``fetch`` (the concurrent listings of one export), ``collector`` and ``dedup`` (rows
spilled to disk and deduplicated; ``scratch``, the spill files, built with ``core.arrow_arrays``),
``deduplicated`` (the winners, written out) and ``tallies`` (what was counted), ``quarantine``
(records that break the interface), ``extra_fields`` (fields beyond the interface's),
``schema`` (the one Arrow schema),
``clock`` (our clock against the API's), ``report`` (ExportReport, the drop check and the
manifest), ``layout`` (the files of a snapshot and their names), ``snapshot`` (reading:
find, list, load), ``store``, ``publish`` and ``lock`` (a local directory: staging, atomic
publication, pruning), ``objectstore/`` (the same on S3, GCS and Azure), ``tables/`` (Delta
and Iceberg instead of dated folders) and ``diff``. The imports run one way: ``run`` at the
top, ``layout``, ``config`` and ``location`` at the bottom. These modules load pyarrow;
import them only where tables are made (``config`` alone stays light, for the command line).
"""
