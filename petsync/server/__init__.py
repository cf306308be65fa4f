"""petsync's reference Petstore server: the interface, served from SQLite, with faults on demand.

Heavy imports (Starlette, uvicorn) live in the submodules; import what you need from them::

    from petsync.server.app import ServerConfig
    from petsync.server.runner import start_server
"""
