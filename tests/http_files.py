"""A local HTTP server for tests that read URLs: routes set by the test, requests counted."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] | None = None
    delay: float = 0.0  # seconds before answering


class Served:
    """The server's routes (path → Route; anything else is a 404) and the paths asked."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.routes: dict[str, Route] = {}
        self.hits: list[str] = []
        self._lock = threading.Lock()

    def serve(self, path: str, body: str | bytes, **route: Any) -> str:
        """Answer ``path`` with ``body``; returns its URL."""
        self.routes[path] = Route(body=body.encode() if isinstance(body, str) else body, **route)
        return self.url + path

    def count(self, path: str) -> int:
        with self._lock:
            return self.hits.count(path)

    def _hit(self, path: str) -> Route:
        with self._lock:
            self.hits.append(path)
        return self.routes.get(path, Route(404, b"not here"))


def free_port() -> int:
    """A port nothing listens on (for a moment: tests use it at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, what: str, within: float = 15.0) -> None:
    """Poll ``url`` until it answers 200 (a server's readiness endpoint), or fail naming it."""
    deadline = time.monotonic() + within
    while True:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"{what} did not start"
        time.sleep(0.05)


@contextmanager
def http_server() -> Iterator[Served]:
    """A threaded HTTP server on 127.0.0.1 and a free port, shut down on the way out."""
    served: Served

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            route = served._hit(self.path)
            time.sleep(route.delay)
            try:
                self.send_response(route.status)
                for name, value in (route.headers or {}).items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(route.body)))
                self.end_headers()
                self.wfile.write(route.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the reader stopped early (a size limit, a timeout): as it should

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served = Served(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
