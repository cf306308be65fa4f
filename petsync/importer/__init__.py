"""The import job: spreadsheet rows to POST /pets, each row created at most once.

``run`` (run_import: the three passes in order), ``config`` (ImportConfig), ``precheck`` (the
first pass: every row read before anything is sent), ``baseline`` (the matching pets that
existed before the first POST) and ``settle`` (uncertain rows decided from the API),
``sender`` (the worker threads and the adaptive ``concurrency_limit``), ``outputs`` (the
write pass and its reject, accepted and uncertain files: where they go, ``output_paths``; what
their rows hold, ``output_rows``; how they are written, ``output_csv``), ``outcome``
(ImportReport, what a run did),
``journal`` (each row's state, durable before its POST, one per file content), ``inbox``
(globs, several files, the archive), ``sheets/`` (the spreadsheet readers: rows of text
from CSV and workbooks), ``columns`` (header matching), ``validation`` (a row
to a NewPet or its errors); ``sheets/excel_safe`` is the reversible formula-injection rule.
"""
