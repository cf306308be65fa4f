"""The export job: every listing of the catalogue into one dated, typed snapshot.

``run`` (run_export: lock, fetch, deduplicate, hand the night to its format), ``config``
(ExportConfig), ``fetch`` (the concurrent listings of one export), ``collector`` and
``id_keys`` (rows spilled to disk, and the index of their ids that deduplicates them;
``scratch``, the spill files), ``winning_rows`` (the rows that won, streamed to the
format) and ``tallies`` (what was counted), ``quarantine`` (records that break the
interface), ``extra_fields`` (fields beyond the interface's), ``clock`` (our clock against
the API's), ``outcome`` (ExportReport: the night judged, the drop check and the manifest),
``inventory`` (the nights a store holds) and ``diff``. Where and how a night is kept
(dated folders, Delta, Iceberg) and read back is :mod:`petsync.formats`; where a snapshot
is written, locked and published (a local directory or an object store) is
:mod:`petsync.storage`. The imports run one way: ``run`` at the top, ``config`` at the
bottom. These modules load pyarrow; import them only where tables are made (``config``
alone stays light, for the command line).
"""
