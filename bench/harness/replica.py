"""Replicas of ``atrium serve`` as real processes, for the replicas and console scenarios and the
production tests: each on a local port of its own that it keeps when started again, its logs in
a file, stopped as a platform stops it (SIGTERM, then waiting for it to exit) and started
again."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from bench.harness import BenchFailure
from bench.harness.apps import CLI_MODULE
from bench.harness.host import child_environment, cpu_seconds, free_port
from bench.harness.process import Child, answers, local_client, read_log, spawn

__all__ = ["Replica", "free_port", "running_replicas", "serve_environment"]

READY_WITHIN_S: Final = 90.0  # several Pythons importing Strawberry at once on two cores
STOP_WITHIN_S: Final = 60.0
PORT_ATTEMPTS: Final = 3

serve_environment = child_environment  # the replicas' settings over this environment


@dataclass(slots=True)
class Replica:
    """One ``atrium serve``; ``start`` again after ``stop`` is a restart on the same port."""

    name: str
    env: dict[str, str]
    directory: Path
    port: int = field(default_factory=free_port)
    args: tuple[str, ...] = ()
    child: Child | None = None
    starts: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.name}.log"

    def _started(self) -> Child:
        assert self.child is not None, f"{self.name} was never started"
        return self.child

    @property
    def pid(self) -> int:
        return self._started().pid

    async def start(self) -> None:
        """Start the process; ``ready`` waits for it."""
        self.starts += 1
        with self.log.open("ab") as out:
            out.write(f"--- start {self.starts}\n".encode())
        argv = [sys.executable, "-m", CLI_MODULE, "serve", "--host", "127.0.0.1"]
        argv += ["--port", str(self.port), *self.args]
        self.child = await spawn(
            f"replica {self.name} (port {self.port})",
            argv,
            self.log,
            env=self.env,
            cwd=self.directory,
            append=True,
        )

    async def ready(self, within: float = READY_WITHIN_S) -> None:
        """Wait until ``/readyz`` answers 200; fails if the process exits first."""
        await self.until(lambda: answers(f"{self.base}/readyz"), within)

    async def until(
        self, check: Callable[[], Awaitable[bool]], within: float, what: str = "ready"
    ) -> None:
        """Wait until ``check`` says so; fails if the process exits first."""
        await self._started().until(check, within, what)

    def send_signal(self, sig: int) -> None:
        child = self._started()
        assert child.running
        child.process.send_signal(sig)

    async def wait(self, within: float = STOP_WITHIN_S) -> int:
        """The exit status, once the process has exited."""
        child = self._started()
        if not await child.wait(within):
            raise self.failure(f"still running {within:.0f} s after it was told to stop")
        code = child.process.returncode
        assert code is not None
        return code

    async def stop(self) -> int:
        """SIGTERM, as a platform stops a replica: it drains, then exits; its status."""
        self.send_signal(signal.SIGTERM)
        return await self.wait()

    async def kill(self) -> None:
        """Stop whatever still runs, at once (the end of a test or a benchmark)."""
        if self.child is not None:
            await self.child.kill()

    def cpu_seconds(self) -> float:
        """The process's user and system CPU time so far (Linux)."""
        found = cpu_seconds([self.pid])
        if found is None:
            raise BenchFailure("a replica's CPU time is read from /proc (Linux)")
        return found

    async def metrics(self) -> dict[str, float]:
        """``/metrics`` as ``{'name{labels}': value}``."""
        async with local_client(10) as client:
            text = (await client.get(f"{self.base}/metrics")).text
        found = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                series, _, value = line.rpartition(" ")
                found[series] = float(value)
        return found

    def log_text(self) -> str:
        return read_log(self.log)

    def lost_its_port(self) -> bool:
        """Whether its last start ended as the port, free when chosen, was taken before the
        server bound it (by any process of the machine: the ports are local ones)."""
        last = self.log_text().rpartition(f"--- start {self.starts}\n")[2]
        return self.child is not None and not self.child.running and "cannot listen" in last

    def failure(self, what: str) -> BenchFailure:
        return self._started().failure(what)


@contextlib.asynccontextmanager
async def running_replicas(
    names: Sequence[str], settings: Mapping[str, str]
) -> AsyncIterator[list[Replica]]:
    """Replicas with ``settings`` (``ATRIUM_*`` variables) started together (their logs in a
    temporary directory) and ready; on the way out stopped as a platform stops them
    (SIGTERM), and killed if that failed."""
    with tempfile.TemporaryDirectory(prefix="atrium-bench-replicas-") as tmp:
        env = serve_environment(settings)
        replicas = [Replica(name, env, Path(tmp)) for name in names]
        try:
            await asyncio.gather(*(_started(r) for r in replicas))
            yield replicas
        finally:
            for replica in replicas:
                if replica.child is not None and replica.child.running:
                    with contextlib.suppress(BenchFailure):
                        await replica.stop()
                await replica.kill()


async def _started(replica: Replica) -> None:
    """``replica`` started and ready, on another port if its own was taken meanwhile."""
    for _ in range(PORT_ATTEMPTS - 1):
        await replica.start()
        try:
            await replica.ready()
            return
        except BenchFailure:
            if not replica.lost_its_port():
                raise
        replica.port = free_port()
    await replica.start()
    await replica.ready()
