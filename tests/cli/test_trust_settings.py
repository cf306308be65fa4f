"""A CA file or proxy that is wrong is named as itself, at once (exit 2), never retried as the
API being down: ``SSL_CERT_FILE`` missing, a FIFO or not PEM; a proxy that refuses
connections; an ``https://`` proxy whose own certificate is untrusted.

The proxies are on 127.0.0.1 (a bound socket that does not listen, a TLS server with a
self-signed certificate made here); the API's host is only ever named, never reached.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from petsync.cli import cli

BASE = "https://petstore.test/v1"
KEY = "sk-trust-test-0123456789"
TIMEOUT = 30.0
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "REQUEST_METHOD")


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """``petsync check`` against BASE with only the given trust and proxy settings."""
    monkeypatch.chdir(tmp_path)

    def invoke(**settings: str) -> Result:
        env: dict[str, str | None] = {
            "PETSYNC_API_KEY": KEY,
            "HOME": str(tmp_path),
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
            "SSL_CERT_FILE": None,
            "SSL_CERT_DIR": None,
        }
        for name in _PROXY_VARIABLES:
            env[name] = env[name.lower()] = None
        env.update(settings)
        result = CliRunner().invoke(cli, ["check", "--base-url", BASE, "--retries", "3"], env=env)
        assert KEY not in result.output
        return result

    return invoke


def test_a_missing_ca_file_is_a_setting_error_at_once(
    run: Callable[..., Result], tmp_path: Path
) -> None:
    missing = tmp_path / "corp-ca.pem"

    result = run(SSL_CERT_FILE=str(missing))

    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"Error: SSL_CERT_FILE names an unusable CA file: cannot read CA file {missing}: No such "
        "file or directory. Point SSL_CERT_FILE at a PEM file of the certificates to trust, or "
        "unset it to trust the usual public authorities\n"
    )


def test_a_fifo_as_ca_file_is_refused_without_blocking(
    run: Callable[..., Result], tmp_path: Path
) -> None:
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)

    result = run(SSL_CERT_FILE=str(fifo))

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        f"Error: SSL_CERT_FILE names an unusable CA file: CA file {fifo} is a FIFO (named "
        "pipe), not a regular file"
    )


def test_a_ca_file_without_a_certificate_is_named(
    run: Callable[..., Result], tmp_path: Path
) -> None:
    empty = tmp_path / "ca.pem"
    empty.write_text("not a certificate\n")

    result = run(SSL_CERT_FILE=str(empty))

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        f"Error: SSL_CERT_FILE names CA file {empty}, which holds no PEM certificate"
    )


def test_a_ca_directory_that_is_not_one_is_named(
    run: Callable[..., Result], tmp_path: Path
) -> None:
    result = run(SSL_CERT_DIR=str(tmp_path / "certs"))

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        f"Error: SSL_CERT_DIR names {tmp_path / 'certs'}, which is not a directory"
    )


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A loopback port bound but not listening: every connection to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_a_dead_proxy_is_named_not_the_base_url(
    run: Callable[..., Result], refusing_port: int
) -> None:
    proxy = f"http://user:hunter2@127.0.0.1:{refusing_port}"

    result = run(HTTPS_PROXY=proxy)

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        f"Error: could not reach the proxy http://***@127.0.0.1:{refusing_port} (from "
        "HTTPS_PROXY) for GET https://petstore.test/v1/pets"
    )
    assert "check that the proxy is up and that HTTPS_PROXY names it rightly" in result.stderr
    assert "hunter2" not in result.output
    assert "base URL" not in result.stderr


@pytest.fixture
def untrusted_tls_proxy(certificate: tuple[Path, Path]) -> Iterator[int]:
    """A TLS server on loopback with a self-signed certificate: an https:// proxy nobody
    trusts. It answers handshakes until the test ends."""
    cert, key = certificate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(TIMEOUT)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError):  # the client refuses the certificate
                conn.settimeout(TIMEOUT)
                context.wrap_socket(conn, server_side=True).close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    done.set()
    listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() at once
    listener.close()
    thread.join(TIMEOUT)


def test_an_untrusted_https_proxy_is_named_not_the_api(
    run: Callable[..., Result], untrusted_tls_proxy: int
) -> None:
    proxy = f"https://127.0.0.1:{untrusted_tls_proxy}"

    result = run(HTTPS_PROXY=proxy)

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        f"Error: the TLS certificate of the proxy {proxy} (from HTTPS_PROXY) was refused for "
        "GET https://petstore.test/v1/pets"
    )
    assert "the API was not reached" in result.stderr
    assert "certificate of petstore.test" not in result.stderr
