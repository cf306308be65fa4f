"""Reading an .xls or .xlsb workbook in a child process, its memory limited.

calamine holds a sheet as one grid from A1 to its last value, and takes the last value's
row and column from the cells themselves (an .xlsb cell's column is any 32-bit number): a
small file with one far cell asks for hundreds of GiB and aborts the process, which no
``except`` can catch. The binary formats are not measured beforehand as ``.xlsx`` is
(:mod:`.sheet_range`): their dimension records are not what calamine sizes the grid by,
so trusting them would not be sound. The read runs instead in a child Python process
(``python -m petsync.importer.sheets.isolated_read``) whose address space is limited to
:data:`CHILD_MEMORY_LIMIT` bytes (``RLIMIT_AS``, where the platform has it) and its CPU
time to :data:`CHILD_CPU_LIMIT` seconds (``RLIMIT_CPU``: calamine reads some damaged files
forever, holding the interpreter, so no signal handler would run). An abort, a loop, a
crash or a memory blow-up there costs that file only: an :class:`InputError` naming the
file and the reason. The child runs in its own session, so a stop signal is the parent's
to handle; the parent kills the child if it is stopped while waiting.

The request goes to the child's stdin and the rows come back on its stdout, both pickled;
the child writes nothing else there. Its stderr (a Rust panic message) is kept for the
error, cut to :data:`_REASON_LIMIT` characters.
"""

from __future__ import annotations

import os
import pickle
import resource
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from petsync.core.errors import InputError
from petsync.core.interface import CHILD_CPU_LIMIT, CHILD_MEMORY_LIMIT
from petsync.importer.sheets.held import HeldWorkbook
from petsync.importer.sheets.sheet_values import read_sheet_values

ISOLATED_SUFFIXES = frozenset({".xls", ".xlsb"})
_REASON_LIMIT = 400
_MODULE = "petsync.importer.sheets.isolated_read"


def child_command() -> list[str]:
    """The command that runs the child: this Python, this module."""
    return [sys.executable, "-m", _MODULE]


def read_in_child(
    path: Path,
    sheet_name: str | None,
    held: HeldWorkbook | None = None,
    *,
    command: Sequence[str] | None = None,
    memory_limit: int = CHILD_MEMORY_LIMIT,
    cpu_limit: int = CHILD_CPU_LIMIT,
) -> tuple[str, list[list[Any]]]:
    """The chosen sheet's name and its rows of values, read by calamine in a child process.

    An :class:`InputError` raised by the reader in the child is raised here with its
    message; a child that dies or answers nothing becomes an :class:`InputError` naming the
    file and what happened. The child reads the descriptor ``held`` (the one the check
    opened), inherited at the same number, through the same name.
    """
    fd = None if held is None else held.fd
    name = None if held is None else held.name
    request = pickle.dumps((str(path), name, sheet_name, memory_limit, cpu_limit))
    try:
        done = subprocess.run(
            list(command or child_command()),
            input=request,
            capture_output=True,
            check=False,
            start_new_session=True,
            env=_child_env(),
            pass_fds=() if fd is None else (fd,),
        )
    except OSError as exc:
        raise InputError(f"{path}: cannot start the workbook reader ({exc})") from exc
    if done.returncode == 0:
        try:
            kind, payload = pickle.loads(done.stdout)
        except Exception:  # noqa: BLE001 - whatever the child left is not an answer
            kind, payload = "lost", None
        if kind == "rows":
            chosen, values = payload
            return str(chosen), values
        if kind == "error":
            raise InputError(str(payload))
    if done.returncode == -getattr(signal, "SIGXCPU", 0) != 0:
        raise InputError(
            f"{path}: the workbook reader stopped after {cpu_limit} s of CPU time (calamine "
            "reads some damaged files forever); open the workbook in Excel or LibreOffice "
            "and save it again, or save the sheet as .xlsx or CSV UTF-8"
        )
    raise InputError(_died(path, done.returncode, done.stderr, memory_limit))


def _child_env() -> dict[str, str]:
    """The environment without petsync's settings (the key among them), no Rust backtrace."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("PETSYNC_")}
    env["RUST_BACKTRACE"] = "0"
    return env


def _died(path: Path, code: int, stderr: bytes, memory_limit: int) -> str:
    if code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    elif code == 0:
        how = "it gave no answer"
    else:
        how = f"exit status {code}"
    said: list[str] = []
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.startswith(("stack backtrace:", "note: ")):
            break  # what follows a panic's message is not for the person importing
        said.append(line.strip())
    text = " ".join(line for line in said if line)
    if len(text) > _REASON_LIMIT:
        text = text[:_REASON_LIMIT] + "..."
    reason = f"{how}: {text!r}" if text else how
    return (
        f"{path}: the workbook reader stopped ({reason}); a sheet whose used range is too "
        f"large for {memory_limit} bytes of memory (a value far from the others?) or a "
        "damaged file. Delete the rows and columns after your data (select them, Delete), "
        "save, and import again; or save the sheet as .xlsx or CSV UTF-8"
    )


def _child_main() -> int:
    """Read one workbook as asked on stdin; answer on stdout (the child's side)."""
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # nothing else may reach the answer's stream
    path, name, sheet_name, memory_limit, cpu_limit = pickle.loads(sys.stdin.buffer.read())
    _limit_memory(int(memory_limit))
    _limit_cpu(int(cpu_limit))

    answer: tuple[str, Any]
    try:
        answer = ("rows", read_sheet_values(Path(path), sheet_name, name, check_grid=True))
    except InputError as exc:
        answer = ("error", str(exc))
    out.write(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    out.flush()
    return 0


def _limit_memory(limit: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    for lower in (soft, hard):  # a tighter limit already set (ulimit -v) is kept
        if lower != resource.RLIM_INFINITY:
            limit = min(limit, lower)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    # An abort here is expected (a far cell): no core file of the child's memory.
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))


def _limit_cpu(seconds: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if soft != resource.RLIM_INFINITY:
        seconds = min(seconds, soft)  # a tighter limit already set is kept
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, hard))


if __name__ == "__main__":
    raise SystemExit(_child_main())
