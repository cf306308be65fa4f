"""The import job: spreadsheet rows to POST /pets, each row created at most once.

``run`` (run_import), ``config`` (ImportConfig), ``report`` (ImportReport), ``sender`` (the
worker threads and the adaptive ``concurrency_limit``), ``journal`` (each row's state,
durable before its POST), ``spreadsheet`` (CSV and Excel reading), ``columns`` (header
matching), ``validation`` (a row to a NewPet or its errors), ``outputs`` (reject, accepted
and uncertain files) and ``excel_safe`` (the reversible formula-injection rule).
"""
