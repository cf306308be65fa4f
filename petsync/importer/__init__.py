"""The import job: spreadsheet rows to POST /pets, each row created at most once.

``run`` (run_import) calls the stages in order, each handing its result to the next:
``sheets/`` reads (the spreadsheet readers: rows of text from CSV and workbooks, the file
opened once), ``precheck`` checks every row before anything is sent (``header_row``,
``columns``, ``validation``, ``duplicates``) into ``checked_rows``, ``plan`` names the
outputs (``output_paths``), opens the ``journal`` (each row's state, durable before its
POST) and loads what ``provenance`` knows of other imports of the same rows; ``baseline``
and ``settle`` decide uncertain rows from the API; ``sender`` sends (worker threads, the
adaptive ``concurrency_limit``) and ``outputs`` writes the reject, accepted and uncertain
files (what their rows hold, ``output_rows``; how they are written, ``output_csv``).
``outcome`` is what a run did (ImportReport); ``config`` is ImportConfig; ``inbox`` takes
globs, several files and the archive.
"""
