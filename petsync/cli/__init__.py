"""The ``petsync`` command line: one module per command, thin over the library.

Only this package imports click. Each command turns its options into a config object,
calls one library function and renders its report; the group in ``main`` catches
:class:`~petsync.core.errors.PetsyncError` once and exits with its code.
"""

import sys

# A process running petsync's command line never runs httpx's. Yet `import httpx` imports
# httpx's command line too (httpx._main: click, rich and pygments, whenever they are
# installed, as the [iceberg] and [dagster] extras install rich), about 40 ms of CPU in
# every command's start-up, a sixth of an import's. It is refused here, before anything
# imports httpx (`import petsync` does not), so httpx.main is httpx's own stub. A library
# caller's process is left as it is.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

from petsync.cli.main import cli, main  # noqa: E402

__all__ = ["cli", "main"]
