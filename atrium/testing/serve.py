"""``atrium serve`` in a subprocess for browser tests: on a free port of 127.0.0.1, with the
environment given (``ATRIUM_DATABASE_URL``, ``ATRIUM_WEB_DIR``...: the caller's own
``ATRIUM_*`` variables are not passed on), ready once ``/readyz`` answers (and a check of the
caller's, when given), stopped on the way out. Any installed plugin is served, as by
``atrium serve`` itself."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import httpx

__all__ = ["Served", "atrium_serve", "free_port"]

READY_WITHIN = 60.0
# Whether a started server is ready, beyond /readyz (e.g. its clusters synced).
ReadyCheck = Callable[[httpx.AsyncClient, "Served"], Awaitable[bool]]


@dataclass(frozen=True)
class Served:
    """A served Atrium: its base URL, its log, its mode."""

    base: str  # http://127.0.0.1:PORT
    log: Path
    mode: str

    def url(self, path: str) -> str:
        return self.base + path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    async def gql(
        self, query: str, variables: Mapping[str, Any] | None = None, *, user: str | None = None
    ) -> dict[str, Any]:
        """A plain POST (development mode only runs documents it does not already trust)."""
        headers = {"X-Forwarded-User": user} if user else {}
        async with httpx.AsyncClient() as client:
            response = await client.post(
                self.url("/graphql"),
                json={"query": query, "variables": dict(variables or {})},
                headers=headers,
            )
        body: dict[str, Any] = response.json()
        return body

    async def counters(self) -> dict[str, float]:
        """/metrics as {'name{labels}': value}."""
        async with httpx.AsyncClient() as client:
            text = (await client.get(self.url("/metrics"))).text
        found = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                series, _, value = line.rpartition(" ")
                found[series] = float(value)
        return found


def _open_log(path: Path) -> BinaryIO:
    return path.open("wb")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def atrium_serve(
    environment: Mapping[str, str],
    *,
    mode: str = "development",
    port: int | None = None,
    ready: ReadyCheck | None = None,
    arguments: tuple[str, ...] = (),
) -> AsyncIterator[Served]:
    """`atrium serve` on 127.0.0.1 with ``environment`` (ATRIUM_* settings) over the caller's
    environment less its ATRIUM_* variables; on ``port`` when given, else a free one. Ready
    (and ``ready`` says so) before it is yielded; stopped on the way out.

    Asynchronous throughout: backends the test serves from its own loop keep answering."""
    with tempfile.TemporaryDirectory(prefix="atrium-serve-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
        env |= {"ATRIUM_MODE": mode, "ATRIUM_SHUTDOWN_GRACE": "0", **environment}
        log = Path(tmp, "server.log")
        # A free port may be taken before the server binds it: then another.
        for _ in range(1 if port is not None else 3):
            listen = port or free_port()
            with _open_log(log) as out:
                process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    *("-m", "atrium.cli", "serve", "--host", "127.0.0.1", "--port", str(listen)),
                    *arguments,
                    cwd=tmp,
                    env=env,
                    stdout=out,
                    stderr=asyncio.subprocess.STDOUT,
                )
            served = Served(f"http://127.0.0.1:{listen}", log, mode)
            try:
                if await _ready(process, served, ready):
                    yield served
                    return
            finally:
                if process.returncode is None:
                    process.terminate()
                    try:
                        await asyncio.wait_for(process.wait(), 30)
                    except TimeoutError:
                        process.kill()
                        await process.wait()
        raise AssertionError(f"atrium serve found no free port:\n{served.log_text()}")


async def _ready(
    process: asyncio.subprocess.Process, served: Served, ready: ReadyCheck | None
) -> bool:
    """True once /readyz answers and ``ready`` agrees; False if the port was taken."""
    deadline = asyncio.get_running_loop().time() + READY_WITHIN
    async with httpx.AsyncClient(timeout=5) as client:
        while True:
            if process.returncode is not None:
                if "cannot listen" in served.log_text():
                    return False
                raise AssertionError(
                    f"atrium serve exited ({process.returncode}):\n{served.log_text()}"
                )
            try:
                answer = await client.get(served.url("/readyz"))
                if answer.status_code == 200 and (ready is None or await ready(client, served)):
                    return True
            except httpx.TransportError:
                pass
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(
                    f"atrium serve was not ready in {READY_WITHIN:.0f} s:\n{served.log_text()}"
                )
            await asyncio.sleep(0.1)
