"""petsync's reference Petstore server: the interface, served from SQLite, with faults on demand.

Heavy imports (Starlette, uvicorn) live in the submodules; import what you need from them::

    from petsync.server.app import ServerConfig
    from petsync.server.runner import start_server

The server shares only :mod:`petsync.core` with the client side: the models, the errors
and the interface's facts (:mod:`petsync.core.interface`), never the client's code.
"""
