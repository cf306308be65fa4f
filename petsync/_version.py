"""The petsync version: the one place it is written (pyproject.toml reads it from here).

A literal rather than ``importlib.metadata.version()``, which costs every command 30 ms
of start-up to read what the package already knows.
"""

from __future__ import annotations

__version__ = "0.1.0"

USER_AGENT = f"petsync/{__version__}"
