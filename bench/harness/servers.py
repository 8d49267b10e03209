"""Servers of a scenario's own, each an app under uvicorn in a process of its own on a free
local port (``bench.harness.serve``): started, awaited, looked at, and always stopped.

Each server's stderr (its JSON logs, an access log line per request for Atrium) goes to a file
of its own, as a deployed server's would; the end of it is shown when the server fails."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from bench.harness import BenchFailure
from bench.harness.host import child_environment, rss
from bench.harness.load import fetch, request_bytes
from bench.harness.process import Child, spawn
from bench.harness.serve import Factory, floor, name_of

__all__ = ["Server", "Servers", "running_servers", "stack"]

START_TIMEOUT_S: Final = 90.0  # several Pythons importing Strawberry at once on two cores
STOP_TIMEOUT_S: Final = 15.0


@dataclass(slots=True)
class Server:
    name: str
    child: Child
    port: int = 0

    @property
    def pid(self) -> int:
        return self.child.pid

    def rss(self) -> int | None:
        return rss(self.pid)

    async def metric(self, name: str) -> float:
        """One unlabelled value of the server's ``/metrics``."""
        reply = await fetch(self.port, request_bytes("GET", "/metrics", self.port, {}))
        for line in reply.body.decode().splitlines():
            if line.startswith(f"{name} "):
                return float(line.split()[1])
        raise BenchFailure(f"{self.name}: no {name} in /metrics (HTTP {reply.status})")

    def failure(self, what: str) -> BenchFailure:
        return self.child.failure(what)

    async def healthy(self) -> bool:
        try:
            reply = await fetch(self.port, request_bytes("GET", "/healthz", self.port, {}))
        except OSError:
            return False  # not listening yet: its lifespan is still starting
        return reply.status == 200


@dataclass(slots=True)
class Servers:
    """Servers started in one ``running_servers`` block; all stopped when it ends."""

    logs: Path
    started: list[Server] = field(default_factory=list)

    async def start(self, name: str, factory: Factory, *args: str) -> Server:
        """``factory(*args)`` served (see ``bench.harness.serve``), once ``/healthz`` answers."""
        argv = [sys.executable, "-m", "bench.harness.serve", name_of(factory), *args]
        log = self.logs / f"server-{len(self.started)}.log"
        child = await spawn(f"{name} server", argv, log, env=child_environment(), announce=True)
        server = Server(name, child)
        self.started.append(server)
        stdout = child.process.stdout
        assert stdout is not None
        try:
            server.port = int(await asyncio.wait_for(stdout.readline(), START_TIMEOUT_S))
        except (TimeoutError, ValueError):
            await child.wait(1.0)
            raise server.failure("no port announced") from None
        await child.until(server.healthy, START_TIMEOUT_S, "healthy")
        return server

    async def start_floor(self, name: str, body: bytes, media_type: str) -> Server:
        """The floor answering a GET of /graphql with ``body`` (from a file beside the logs)."""
        path = self.logs / f"body-{len(self.started)}"
        await asyncio.to_thread(path.write_bytes, body)
        return await self.start(name, floor, str(path), media_type)

    async def stop_all(self) -> None:
        await asyncio.gather(*(server.child.stop(STOP_TIMEOUT_S) for server in self.started))


@contextlib.asynccontextmanager
async def running_servers() -> AsyncIterator[Servers]:
    with tempfile.TemporaryDirectory(prefix="atrium-bench-servers-") as logs:
        servers = Servers(Path(logs))
        try:
            yield servers
        finally:
            await servers.stop_all()


def stack() -> str:
    """What the servers run on, as installed (uvicorn falls back without uvloop or httptools)."""
    http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    return f"uvicorn, one worker, {http}, {loop} loop"
