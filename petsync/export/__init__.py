"""The export job: every listing of the catalogue into one dated, typed snapshot.

``run`` (run_export), ``config`` (ExportConfig), ``listings`` (the concurrent listings),
``collector`` (rows spilled to disk and deduplicated), ``quarantine`` (records that break
the interface), ``schema`` (the one Arrow schema), ``report`` (ExportReport, the drop check
and the manifest), ``snapshot`` (the layout on disk: find, list, load), ``publish`` (staging
and atomic publication, pruning), ``lock`` and ``diff``. These modules load pyarrow; import
them only where tables are made (``config`` alone stays light, for the command line).
"""
