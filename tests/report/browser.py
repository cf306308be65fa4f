"""Headless Chromium driven over the DevTools protocol on a pipe: open a page, wait for it
to say it is done, list every request it made, take a screenshot, evaluate JavaScript.

``--remote-debugging-pipe`` makes Chromium read protocol messages (JSON, each ended by a
NUL byte) on its file descriptor 3 and write on 4: no port, no websocket library. The
browser's own traffic (update checks and such) goes to a proxy on loopback that answers
nothing, so a test never reaches past this machine.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import selectors
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

HOW_TO_GET = (
    "headless Chromium is needed to open the report: `apt-get install chromium` on "
    "Debian (.ci/run installs it when run as root with CI set)"
)
TIMEOUT = 60.0  # seconds for any one answer from the browser


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class SinkProxy:
    """A proxy on 127.0.0.1 that records each request line it gets and answers nothing."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._arrived = threading.Condition()
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self._server.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(1.0)
                try:
                    line = conn.recv(300).split(b"\r\n")[0].decode("latin-1")
                except OSError:
                    line = "?"
            with self._arrived:
                self.lines.append(line)
                self._arrived.notify_all()

    def wait_for_line(self, text: str, timeout: float = TIMEOUT) -> bool:
        """Wait (at most ``timeout``) until a request line containing ``text`` arrives."""
        with self._arrived:
            return self._arrived.wait_for(
                lambda: any(text in line for line in self.lines), timeout=timeout
            )

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._server.close()


class Browser:
    """One headless Chromium and one page in it."""

    def __init__(self, executable: str, profile: Path, proxy: SinkProxy) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def child_fds() -> None:  # runs in the child: the pipe ends on fds 3 and 4
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        flags = [
            "--headless",
            "--remote-debugging-pipe",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            f"--user-data-dir={profile}",
            f"--proxy-server={proxy.address}",
            "--proxy-bypass-list=<-loopback>",
        ]
        if os.geteuid() == 0:
            flags.append("--no-sandbox")  # Chromium refuses to run its sandbox as root
        self._process = subprocess.Popen(
            [executable, *flags, "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_fds,
            # Python's own descriptors are not inherited (PEP 446); only the dup2'ed 3 and 4.
            close_fds=False,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session = ""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        self.call("Network.enable")
        self.call("Page.enable")

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        with selectors.DefaultSelector() as selector:
            selector.register(self._from_browser, selectors.EVENT_READ)
            while b"\0" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise TimeoutError(f"Chromium said nothing for {TIMEOUT:g} s")
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed its pipe")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def open(self, url: str, *, width: int, height: int) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result["result"].get("value")

    def wait_for(self, expression: str, *, attempts: int = 200) -> Any:
        """Evaluate ``expression`` until it is truthy (bounded: ``attempts`` tries, 50 ms apart,
        a wait on the browser, which renders meanwhile)."""
        for _ in range(attempts):
            value = self.evaluate(expression)
            if value:
                return value
            self._pause()
        raise TimeoutError(f"the page never made {expression!r} true")

    def wait_until(self, condition: Any, *, attempts: int = 200) -> None:
        """Pump the browser's events until ``condition()`` holds (bounded like :meth:`wait_for`:
        events arrive with the answers, so each try is a wait on the browser)."""
        for _ in range(attempts):
            if condition():
                return
            self._pause()
        raise TimeoutError("the browser never sent what was waited for")

    def _pause(self) -> None:
        # Waiting on the browser's own clock: a promise that resolves after 50 ms of its time.
        self.call(
            "Runtime.evaluate",
            {"expression": "new Promise(r => setTimeout(r, 50))", "awaitPromise": True},
        )

    def requested_urls(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(data["data"]))

    def __enter__(self) -> Browser:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            self.call("Browser.close")
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(timeout=20)
        os.close(self._to_browser)
        os.close(self._from_browser)
