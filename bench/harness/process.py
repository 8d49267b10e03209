"""A server the benchmark starts: its process, its output in a log file of its own (the end of
which a failure shows), waiting until it is ready, and stopping it whatever happened."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx

from bench.harness import BenchFailure

__all__ = ["Child", "answers", "read_log", "spawn"]

POLL_S: Final = 0.05


@dataclass(slots=True)
class Child:
    """One process and its log."""

    name: str
    process: asyncio.subprocess.Process
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process.returncode is None

    def log_text(self) -> str:
        return read_log(self.log)

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def failure(self, what: str) -> BenchFailure:
        code = self.process.returncode
        state = "running" if code is None else f"exited with status {code}"
        return BenchFailure(
            f"{self.name} (pid {self.pid}, {state}): {what}\nthe end of its log:\n{self.log_tail()}"
        )

    async def until(
        self, ready: Callable[[], Awaitable[bool]], within: float, what: str = "ready"
    ) -> None:
        """Poll ``ready`` until it says so; fails if the process exits or ``within`` passes."""
        deadline = time.monotonic() + within
        while not await ready():
            if not self.running:
                raise self.failure(f"stopped before it was {what}")
            if time.monotonic() > deadline:
                raise self.failure(f"not {what} after {within:.0f} s")
            await asyncio.sleep(POLL_S)

    async def wait(self, within: float) -> bool:
        """Whether the process exited within ``within`` seconds."""
        try:
            await asyncio.wait_for(self.process.wait(), within)
        except TimeoutError:
            return False
        return True

    async def stop(self, within: float = 15.0, sig: int = signal.SIGTERM) -> None:
        """``sig`` (servers shut down gracefully on SIGTERM), then SIGKILL after ``within``."""
        if not self.running:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(sig)
        if not await self.wait(within):
            await self.kill()

    async def kill(self) -> None:
        """SIGKILL, if it still runs, and wait for it."""
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()


def read_log(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return "(no log)"


async def spawn(
    name: str,
    argv: Sequence[str],
    log: Path,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    announce: bool = False,
    append: bool = False,
) -> Child:
    """Start ``argv`` with its stdout and stderr in ``log`` (``append``: after what is there,
    as a restarted server's). ``announce``: its stdout is a pipe instead, for a first line
    (a port) the caller reads."""
    with log.open("ab" if append else "wb") as out:
        process = await asyncio.create_subprocess_exec(
            *argv,
            env=None if env is None else dict(env),
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE if announce else out,
            stderr=out if announce else asyncio.subprocess.STDOUT,
        )
    return Child(name, process, log)


async def answers(url: str, *, status: int = 200) -> bool:
    """Whether a GET of ``url`` answers ``status`` (False while nothing listens)."""
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            return (await client.get(url)).status_code == status
    except httpx.TransportError:
        return False
