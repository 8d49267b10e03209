"""Replicas of ``atrium serve`` as real processes, for the replicas scenario and the production
tests: each on a local port of its own that it keeps when started again, its logs in a file,
stopped as a platform stops it (SIGTERM, then waiting for it to exit) and started again."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import httpx

__all__ = ["Replica", "free_port", "serve_environment"]

ROOT: Final = Path(__file__).resolve().parent.parent
READY_WITHIN_S: Final = 90.0  # several Pythons importing Strawberry at once on two cores
STOP_WITHIN_S: Final = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_environment(settings: Mapping[str, str]) -> dict[str, str]:
    """This environment without its ``ATRIUM_`` variables, plus ``settings``; this checkout's
    code first on the path, whatever the editable install last mapped."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
    path = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env | {"PYTHONPATH": path} | dict(settings)


@dataclass(slots=True)
class Replica:
    """One ``atrium serve``; ``start`` again after ``stop`` is a restart on the same port."""

    name: str
    env: dict[str, str]
    directory: Path
    port: int = field(default_factory=free_port)
    args: tuple[str, ...] = ()
    process: asyncio.subprocess.Process | None = None
    starts: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.name}.log"

    @property
    def pid(self) -> int:
        assert self.process is not None, f"{self.name} is not running"
        return self.process.pid

    async def start(self) -> None:
        """Start the process; ``ready`` waits for it."""
        self.starts += 1
        with self.log.open("ab") as out:
            out.write(f"--- start {self.starts}\n".encode())
            out.flush()
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "atrium.cli",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                *self.args,
                cwd=self.directory,
                env=self.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
            )

    async def ready(self, within: float = READY_WITHIN_S) -> None:
        """Wait until ``/readyz`` answers 200; fails if the process exits first."""
        deadline = time.monotonic() + within
        async with httpx.AsyncClient(timeout=5) as client:
            while True:
                if self.process is None or self.process.returncode is not None:
                    raise self.failure("exited while starting")
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get(f"{self.base}/readyz")).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise self.failure(f"not ready after {within:.0f} s")
                await asyncio.sleep(0.1)

    def send_signal(self, sig: int) -> None:
        assert self.process is not None and self.process.returncode is None
        self.process.send_signal(sig)

    async def wait(self, within: float = STOP_WITHIN_S) -> int:
        """The exit status, once the process has exited."""
        assert self.process is not None
        try:
            return await asyncio.wait_for(self.process.wait(), within)
        except TimeoutError:
            raise self.failure(f"still running {within:.0f} s after it was told to stop") from None

    async def stop(self) -> int:
        """SIGTERM, as a platform stops a replica: it drains, then exits; its status."""
        self.send_signal(signal.SIGTERM)
        return await self.wait()

    async def kill(self) -> None:
        """Stop whatever still runs, at once (the end of a test or a benchmark)."""
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()

    def cpu_seconds(self) -> float:
        """The process's user and system CPU time so far (Linux)."""
        stat = Path(f"/proc/{self.pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    async def metrics(self) -> dict[str, float]:
        """``/metrics`` as ``{'name{labels}': value}``."""
        async with httpx.AsyncClient(timeout=10) as client:
            text = (await client.get(f"{self.base}/metrics")).text
        found = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                series, _, value = line.rpartition(" ")
                found[series] = float(value)
        return found

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"

    def failure(self, what: str) -> AssertionError:
        tail = "\n".join(self.log_text().splitlines()[-40:])
        return AssertionError(f"replica {self.name} (port {self.port}): {what}\n{tail}")
