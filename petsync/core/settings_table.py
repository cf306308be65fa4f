"""The one table of settings: each one's option, job-file key and library keyword.

A message names a setting by its entry here (:mod:`petsync.core.wording` puts it in the
reader's terms), never by one of its names typed out. Tests keep the table and the
command line in step: every option of every command is a setting here, or one of the few
the command line keeps to itself (``--help``, ``--version``, ``run --check`` ...), and every
key a job file takes is a setting's key; a setting names no option that is gone.

A row reads: the long option (None for an argument), the library's keyword (None when only
the command line has the setting), the commands that take it. The job-file key follows
from the option (:attr:`~petsync.core.wording.Setting.key`).
"""

from __future__ import annotations

from petsync.core.wording import Command, Setting

# The commands that take the target options (petsync.cli.options.target_options).
_TARGET = ("check", "get", "export", "import", "run", "config show")
_JOBS = ("export", "import")

# -- the target: where the API is and the key to it; the client's limits --------------------
BASE_URL = Setting("--base-url", "base_url", _TARGET)
API_KEY_FILE = Setting("--api-key-file", "api_key_file", _TARGET)
ENV = Setting("--env", "env_name", _TARGET)
CONFIG = Setting("--config", "config_path", _TARGET)
ALLOW_INSECURE_HTTP = Setting("--allow-insecure-http", "allow_insecure_http", _TARGET)
TIMEOUT = Setting("--timeout", "request_timeout", _TARGET)
RETRIES = Setting("--retries", "max_attempts", _TARGET)  # RetryPolicy: retries + 1
RETRY_BUDGET = Setting("--retry-budget", "budget_seconds", _TARGET)
MAX_RESPONSE_SIZE = Setting("--max-response-size", "max_response_bytes", _TARGET)

# -- what a job reports, and how it stops ---------------------------------------------------
JSON = Setting(
    "--json", None, ("check", "export", "import", "diff", "history", "snapshots", "config show")
)
GRACE = Setting("--grace", "grace_seconds", _JOBS)  # StopRequest(grace_seconds=)
METRICS_FILE = Setting("--metrics-file", "path", _JOBS)  # write_metrics(path=)
CONCURRENCY = Setting("--concurrency", "concurrency", _JOBS)
LOG_FORMAT = Setting("--log-format", "log_format", ("petsync",))  # configure_logging
LOG_LEVEL = Setting("--log-level", "level", ("petsync",))

# -- petsync export (ExportConfig) -----------------------------------------------------------
OUT = Setting("--out", "out_dir", ("export",))
STATUS = Setting("--status", "statuses", ("export",))
SWEEP = Setting("--sweep", "sweep", ("export",), off="--no-sweep")
FORMAT = Setting("--format", "format", ("export",))
TABLE_FORMAT = Setting("--table-format", "table_format", ("export",))
STRICT = Setting("--strict", "strict", ("export",))
KEEP = Setting("--keep", "keep", ("export",))
MAX_DROP = Setting("--max-drop", "max_drop", ("export",))
PAGINATION = Setting("--pagination", "pagination", ("export",))  # ClientConfig
MEMORY_BUDGET = Setting("--memory-budget", "memory_budget", ("export",))
CLOCK_TOLERANCE = Setting("--clock-tolerance", "clock_tolerance", ("export",))
SCRATCH_DIR = Setting("--scratch-dir", "scratch_dir", ("export",))
EXTRA_FIELDS = Setting("--extra-fields", "extra_fields", ("export",))
# A job file's step after the export (ops.jobfile.AFTER_KEYS): update_history(OUT).
UPDATE_HISTORY = Setting(None, None, ("export",), argument="update_history")

# -- petsync import (ImportConfig) -----------------------------------------------------------
FILE = Setting(None, "path", ("import",), argument="file")
SHEET = Setting("--sheet", "sheet", ("import",))
ENCODING = Setting("--encoding", "encoding", ("import",))
DELIMITER = Setting("--delimiter", "delimiter", ("import",))
MAP = Setting("--map", "mappings", ("import",))
HEADER_ROW = Setting("--header-row", "header_row", ("import",))
CATEGORY_MAP = Setting("--category-map", "category_map", ("import",))
MERGED_CELLS = Setting("--merged-cells", "merged_cells", ("import",))
DRY_RUN = Setting("--dry-run", "dry_run", ("import", "run"))
MAX_ERRORS = Setting("--max-errors", "max_errors", ("import",))
OUT_DIR = Setting("--out-dir", "out_dir", ("import",))
JOURNAL = Setting("--journal", "journal_path", ("import",))
STATE_DIR = Setting("--state-dir", "journal_home", ("import",))
REPORT = Setting("--report", None, ("import",))
SETTLE = Setting("--settle", "settle", ("import",))
BASELINE = Setting("--baseline", "baseline", ("import",), off="--no-baseline")
ARCHIVE = Setting("--archive", "archive_dir", ("import",))  # run_batch(archive_dir=)
ALLOW_DUPLICATES = Setting("--allow-duplicates", "allow_duplicates", ("import",))
RESEND_UNCERTAIN = Setting("--resend-uncertain", "resend_uncertain", ("import",))

# -- petsync run: a job file, and what the run changes of it ---------------------------------
RUN_CHECK = Setting("--check", None, ("run",))
RUN_JSON = Setting("--json", None, ("run",), off="--text")
SET = Setting("--set", None, ("run",))

# -- history, report, diff, snapshots, config show --------------------------------------------
REBUILD = Setting("--rebuild", "rebuild", ("history",))  # update_history(rebuild=)
OUTPUT = Setting("--output", "output", ("report",))  # write_report(output=)
DIFF_DIR = Setting("--dir", "directory", ("diff",))  # diff_snapshots(directory=)
DETAILS = Setting("--details", None, ("diff",))
SHOW_OUT = Setting("--out", None, ("config show",))
SHOW_CHECK = Setting("--check", None, ("config show",))

# -- petsync serve (ServerConfig, start_server) and petsync demo (run_demo) -------------------
HOST = Setting("--host", "host", ("serve",))
PORT = Setting("--port", "port", ("serve",))
SERVE_API_KEY_FILE = Setting("--api-key-file", "api_key", ("serve",))
DB = Setting("--db", "db_path", ("serve",))
SEED_PETS = Setting("--seed-pets", "seed_pets", ("serve",))
SERVE_PAGINATION = Setting("--pagination", "pagination", ("serve",))
PAGE_CAP = Setting("--page-cap", "page_cap", ("serve",))
FAIL_RATE = Setting("--fail-rate", "fail_rate", ("serve",))  # Faults
RATE_LIMIT = Setting("--rate-limit", "rate_limit", ("serve",))
LATENCY_MS = Setting("--latency-ms", "latency_ms", ("serve",))
FAIL_AFTER_STORE_RATE = Setting("--fail-after-store-rate", "fail_after_store_rate", ("serve",))
FAULT_SEED = Setting("--fault-seed", "seed", ("serve",))
EXTRA_FIELDS_DEMO = Setting("--extra-fields-demo", "extra_fields", ("serve", "demo"))
DEMO_PETS = Setting("--pets", "pets", ("demo",))
DEMO_NIGHTS = Setting("--nights", "nights", ("demo",))
DEMO_OUT = Setting("--out", "out_dir", ("demo",))

# Commands a message tells to run, with the library function that does the same.
HISTORY_COMMAND = Command("history", "update_history")

SETTINGS: tuple[Setting, ...] = tuple(
    value for value in dict(globals()).values() if isinstance(value, Setting)
)
