"""The server processes of ``bench.serving``: started, awaited, looked at, and always stopped.

Each server's stderr (its JSON logs, an access log line per request for Atrium) goes to a file
of its own, as a deployed server's would; the end of it is shown when the server fails."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from bench.harness import BenchFailure
from bench.serving_load import fetch, request_bytes

__all__ = ["Server", "Servers", "running_servers"]

START_TIMEOUT_S: Final = 90.0  # four Pythons importing Strawberry at once on two cores
STOP_TIMEOUT_S: Final = 15.0


@dataclass(slots=True)
class Server:
    name: str
    process: asyncio.subprocess.Process
    log: Path
    port: int = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    def rss(self) -> int | None:
        """The resident set in bytes (VmRSS), None where there is no /proc."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError):
            pass
        return None

    async def metric(self, name: str) -> float:
        """One unlabelled value of the server's ``/metrics``."""
        reply = await fetch(self.port, request_bytes("GET", "/metrics", self.port, {}))
        for line in reply.body.decode().splitlines():
            if line.startswith(f"{name} "):
                return float(line.split()[1])
        raise BenchFailure(f"{self.name}: no {name} in /metrics (HTTP {reply.status})")

    def failure(self, what: str) -> BenchFailure:
        code = self.process.returncode
        state = "running" if code is None else f"exited with status {code}"
        return BenchFailure(
            f"{self.name} server (pid {self.pid}, {state}): {what}\n"
            f"the end of its log:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


@dataclass(slots=True)
class Servers:
    """Servers started in one ``running_servers`` block; all stopped when it ends."""

    logs: Path
    started: list[Server] = field(default_factory=list)

    async def start(self, name: str, *args: str, module: str = "bench.serving_server") -> Server:
        """``python -m <module> <args>``, which prints its port and serves /healthz."""
        log = self.logs / f"server-{len(self.started)}.log"
        with log.open("wb") as stderr:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                module,
                *args,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
            )
        server = Server(name, process, log)
        self.started.append(server)
        assert process.stdout is not None
        try:
            line = await asyncio.wait_for(process.stdout.readline(), START_TIMEOUT_S)
            server.port = int(line)
        except (TimeoutError, ValueError):
            await _wait(process, 1.0)
            raise server.failure("no port announced") from None
        await _until_healthy(server, time.monotonic() + START_TIMEOUT_S)
        return server

    async def stop_all(self) -> None:
        await asyncio.gather(*(_stop(server.process) for server in self.started))


@contextlib.asynccontextmanager
async def running_servers() -> AsyncIterator[Servers]:
    with tempfile.TemporaryDirectory(prefix="atrium-serving-logs-") as logs:
        servers = Servers(Path(logs))
        try:
            yield servers
        finally:
            await servers.stop_all()


async def _until_healthy(server: Server, deadline: float) -> None:
    request = request_bytes("GET", "/healthz", server.port, {})
    while True:
        if server.process.returncode is not None:
            raise server.failure("stopped while starting")
        try:
            reply = await fetch(server.port, request)
        except OSError:
            reply = None  # not listening yet: its lifespan is still starting
        if reply is not None and reply.status == 200:
            return
        if time.monotonic() > deadline:
            raise server.failure(f"not healthy after {START_TIMEOUT_S:.0f} s")
        await asyncio.sleep(0.1)


async def _wait(process: asyncio.subprocess.Process, seconds: float) -> bool:
    try:
        await asyncio.wait_for(process.wait(), seconds)
    except TimeoutError:
        return False
    return True


async def _stop(process: asyncio.subprocess.Process) -> None:
    """SIGTERM (uvicorn shuts down gracefully: the lifespan closes the pool), then SIGKILL."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    if not await _wait(process, STOP_TIMEOUT_S):
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
