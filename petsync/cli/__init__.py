"""The ``petsync`` command line: one module per command, thin over the library.

Only this package imports click. Each command turns its options into a config object,
calls one library function and renders its report; the group in ``main`` catches
:class:`~petsync.core.errors.PetsyncError` once and exits with its code.
"""

from petsync.cli.main import cli, main

__all__ = ["cli", "main"]
