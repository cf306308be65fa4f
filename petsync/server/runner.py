"""Run the reference server: uvicorn in a background thread, and the ``serve`` loop.

:func:`start_server` binds the socket first (port 0 = a free port, known before the call
returns), then runs uvicorn on it in a daemon thread and waits, bounded, until it accepts.
Tests and the demo use it directly; :func:`serve_forever` adds what the ``petsync serve``
command needs: wait for SIGTERM or Ctrl-C, then stop cleanly and close the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import email.utils
import logging
import signal
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from types import FrameType, TracebackType

import uvicorn

from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError, ServerStartError
from petsync.core.settings_table import DB, HOST, PORT
from petsync.server.app import API_PREFIX, ServerConfig, create_app
from petsync.server.faults import Faults
from petsync.server.seed import seed_rows
from petsync.server.store import PetStore

logger = logging.getLogger(__name__)

STARTUP_TIMEOUT = 15.0  # seconds to wait for uvicorn to accept connections
SHUTDOWN_TIMEOUT = 10  # seconds to wait for in-flight requests when stopping


class _PromptServer(uvicorn.Server):
    """uvicorn's Server, woken by :meth:`wake` instead of polling its stop flag every 0.1 s.

    Stopping is then as quick as uvicorn's own shutdown; test suites start and stop
    hundreds of these.
    """

    _loop: asyncio.AbstractEventLoop | None = None
    _wake: asyncio.Event | None = None
    fixed_date: bytes | None = None  # the Date header every answer carries; None: the time now

    async def on_tick(self, counter: int) -> bool:
        stop = await super().on_tick(counter)
        self.stamp_date()  # uvicorn has just put the time now in the Date header
        return stop

    def stamp_date(self) -> None:
        """Put :attr:`fixed_date` (else the time now) in the Date header of the next answers."""
        date = self.fixed_date or email.utils.formatdate(usegmt=True).encode()
        others = [item for item in self.server_state.default_headers if item[0] != b"date"]
        self.server_state.default_headers = [(b"date", date), *others]

    async def main_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        counter = 0
        # on_tick refreshes the Date header when counter % 10 == 0 and says when to exit.
        while not await self.on_tick(counter):
            counter = (counter + 10) % 864_000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), 1.0)

    def wake(self) -> None:
        loop, event = self._loop, self._wake
        if loop is not None and event is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed: nothing to wake
                loop.call_soon_threadsafe(event.set)


class RunningServer:
    """A reference server running in a background thread; a context manager that stops it.

    >>> with start_server(ServerConfig(api_key=ApiKey("k"))) as srv:   # doctest: +SKIP
    ...     print(srv.base_url)
    http://127.0.0.1:54321/v1
    """

    def __init__(
        self,
        *,
        config: ServerConfig,
        store: PetStore,
        server: _PromptServer,
        thread: threading.Thread,
        host: str,
        port: int,
        seeded: int,
    ) -> None:
        self.config = config
        self.store = store
        self.host = host
        self.port = port
        self.seeded = seeded
        self._server = server
        self._thread = thread
        self._stopped = False

    @property
    def base_url(self) -> str:
        """The base address clients use, ending with ``/v1``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{API_PREFIX}"

    @property
    def api_key(self) -> ApiKey:
        return self.config.api_key

    @property
    def faults(self) -> Faults:
        """The live fault switches: change a field and the next request sees it."""
        return self.config.faults

    def serve_date(self, when: dt.datetime | None) -> None:
        """Send ``when`` as every answer's ``Date`` header from now on: a server whose clock
        is stopped there (a test's wrong clock, with no waiting); None: the time now again."""
        stamp = (
            None
            if when is None
            else email.utils.format_datetime(when.astimezone(dt.UTC), usegmt=True)
        )
        self._server.fixed_date = None if stamp is None else stamp.encode()
        self._server.stamp_date()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Finish in-flight requests (bounded), stop uvicorn and close the database."""
        if self._stopped:
            return
        self._stopped = True
        self._server.should_exit = True
        self._server.wake()
        self._thread.join(SHUTDOWN_TIMEOUT)
        if self._thread.is_alive():  # a connection that never ends: give up waiting on it
            self._server.force_exit = True
            self._thread.join(SHUTDOWN_TIMEOUT)
        self.store.close()
        logger.info("server_stopped", extra={"fields": {"base_url": self.base_url}})

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def open_store(config: ServerConfig) -> tuple[PetStore, int]:
    """Open the store and seed it; returns the store and how many pets were seeded.

    Seeding fills a catalogue that never held pets: a ``--db`` file that holds or held pets
    is left as it is (seeding again would collide with their ids, or reuse old ones).
    """
    try:
        store = PetStore(config.db_path)
    except sqlite3.Error as exc:
        raise ConfigError(
            f"cannot open database {config.db_path}: {exc}; pass "
            + DB
            + " with a path in an existing directory, to a petsync database or a new file"
        ) from exc
    seeded = 0
    if config.seed_pets and not store.ever_held_pets():
        started = time.perf_counter()
        seeded = store.insert_many(seed_rows(config.seed_pets))
        logger.info(
            "catalogue_seeded",
            extra={"fields": {"pets": seeded, "seconds": round(time.perf_counter() - started, 3)}},
        )
    return store, seeded


def start_server(
    config: ServerConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    clock: Callable[[], float] = time.monotonic,
) -> RunningServer:
    """Start a reference server in a background thread and return once it accepts requests.

    ``port=0`` picks a free port (read it from ``.base_url``). ``clock`` drives the rate
    limiter, so a test can pass a fake clock and never wait. Raises
    :class:`ServerStartError` if it cannot bind or does not come up in time.
    """
    sock = _listen(host, port)  # first: a port in use fails before seeding a big catalogue
    try:
        store, seeded = open_store(config)
    except BaseException:
        sock.close()
        raise
    bound_port = int(sock.getsockname()[1])
    app = create_app(config, store, clock=clock)
    uv_config = uvicorn.Config(
        app,
        log_config=None,  # leave logging set-up to the application (petsync's own handlers)
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",
        timeout_graceful_shutdown=SHUTDOWN_TIMEOUT,
    )
    server = _PromptServer(uv_config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"petstore-{bound_port}", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(SHUTDOWN_TIMEOUT)
            store.close()
            sock.close()
            raise ServerStartError(f"the reference server on {host}:{bound_port} did not start")
        time.sleep(0.01)  # polling uvicorn's own flag: there is no event to wait on
    running = RunningServer(
        config=config,
        store=store,
        server=server,
        thread=thread,
        host=host,
        port=bound_port,
        seeded=seeded,
    )
    logger.info("server_started", extra={"fields": {"base_url": running.base_url}})
    return running


def _listen(host: str, port: int) -> socket.socket:
    """A bound TCP socket for uvicorn (bound here so port 0 is known before serving)."""
    sock: socket.socket | None = None
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        # proto given explicitly: asyncio sets TCP_NODELAY on accepted sockets only when the
        # listening socket says IPPROTO_TCP; without it every answer waits ~40 ms for a
        # delayed ACK (Nagle), because uvicorn writes headers and body separately.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        if sock is not None:
            sock.close()
        raise ServerStartError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another "
            + PORT
            + " (0 picks a free one) or "
            + HOST
        ) from exc
    return sock


def serve_forever(
    config: ServerConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    on_ready: Callable[[RunningServer], None] = lambda srv: None,
) -> None:
    """Run a server until SIGTERM or SIGINT (Ctrl-C), then stop it cleanly.

    Call from the main thread (signal handlers live there). ``on_ready`` gets the running
    server once it accepts requests, e.g. to print its base URL.
    """
    stop = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        with start_server(config, host=host, port=port) as srv:
            on_ready(srv)
            # A bounded wait in a loop: the handler above runs between waits, and a server
            # thread that died (it should not) ends the loop too.
            while not stop.wait(0.5):
                if not srv.running:
                    raise ServerStartError("the reference server stopped unexpectedly")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
