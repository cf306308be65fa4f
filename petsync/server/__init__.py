"""petsync's reference Petstore server: the interface, served from SQLite, with faults on demand.

Heavy imports (Starlette, uvicorn) live in the submodules; import what you need from them::

    from petsync.server.app import ServerConfig
    from petsync.server.runner import start_server

This package module itself stays light (the command line reads the pagination styles
from it without loading the server).
"""

from __future__ import annotations

from typing import Literal

ServerPagination = Literal["link", "cursor", "offset", "page", "none"]
SERVER_PAGINATION_STYLES: tuple[str, ...] = ("link", "cursor", "offset", "page", "none")

__all__ = ["SERVER_PAGINATION_STYLES", "ServerPagination"]
