"""Debian's HAProxy in front of Atrium's replicas, as a platform team would configure it, for
the replicas scenario and the production tests.

Health checks ask ``/readyz`` every 250 ms and wait up to 2 s for the answer; one failure
takes a server out, two successes bring it back. No ``retries`` and no ``option redispatch``:
HAProxy would otherwise re-send a request whose connection a stopping replica refused to
another one, and hide a replica that drops requests, which most balancers (a Kubernetes
Service among them) would not. Websockets pass through as tunnels that may stay quiet for an
hour.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.harness import BenchFailure
from bench.harness.process import Child, spawn

__all__ = ["HAProxy", "Proxying", "config", "haproxy", "haproxy_binary", "version"]

CHECK_INTERVAL_MS: Final = 250
START_TIMEOUT_S: Final = 10.0


def haproxy_binary() -> str:
    found = shutil.which("haproxy") or (
        "/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None
    )
    if found is None:
        raise BenchFailure("HAProxy is not installed (make system-test-deps installs Debian's)")
    return found


def config(
    port: int,
    servers: Mapping[str, int],
    admin: Path,
    check: str = "/readyz",
    *,
    front: Proxying | None = None,
) -> str:
    """An HAProxy configuration: one frontend on 127.0.0.1:``port``, a backend of ``servers``
    (name → local port) balanced round-robin, each checked by a GET of ``check``; ``front``
    adds to it (an authenticating proxy's lines)."""
    front = front or Proxying()
    source = f" source {front.source}" if front.source else ""
    lines = [
        "global",
        "    maxconn 4096",
        f"    stats socket {admin} mode 600 level admin",
        "",
        *front.sections,
        "defaults",
        "    mode http",
        "    option http-keep-alive",
        "    timeout connect 2s",
        "    timeout client 60s",
        "    timeout server 60s",
        "    timeout tunnel 1h",
        # Unset, a check times out after `inter`: a replica busy for a quarter of a second
        # would be taken out, and with one replica every request refused.
        "    timeout check 2s",
        "    retries 0",
        "",
        "frontend atrium",
        f"    bind 127.0.0.1:{port}",
        *(f"    {line}" for line in front.requests),
        "    default_backend replicas",
        "",
        "backend replicas",
        "    balance roundrobin",
        f"    option httpchk GET {check}",
        "    http-check expect status 200",
        f"    default-server inter {CHECK_INTERVAL_MS}ms fall 1 rise 2",
        *(
            f"    server {name} 127.0.0.1:{server_port} check{source}"
            for name, server_port in servers.items()
        ),
        "",
    ]
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Proxying:
    """What a proxy does besides balancing: ``sections`` before the defaults (a ``userlist``),
    ``requests`` on the frontend (``http-request`` lines), and the ``source`` address its
    connections to the servers come from."""

    sections: tuple[str, ...] = ()
    requests: tuple[str, ...] = ()
    source: str | None = None


@dataclass(slots=True)
class HAProxy:
    port: int
    admin: Path
    child: Child

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.child.pid

    async def command(self, text: str) -> str:
        """One command on the admin socket, its answer."""
        reader, writer = await asyncio.open_unix_connection(str(self.admin))
        try:
            writer.write(text.encode() + b"\n")
            await writer.drain()
            return (await reader.read()).decode()
        finally:
            writer.close()

    async def states(self) -> dict[str, str]:
        """Each server's state as HAProxy sees it: UP, DOWN, and while it changes its mind
        "UP 1/2" and the like."""
        answer = await self.command("show stat")
        rows = csv.DictReader(answer.lstrip("# ").splitlines())
        return {
            row["svname"]: row["status"]
            for row in rows
            if row["pxname"] == "replicas" and row["svname"] not in ("FRONTEND", "BACKEND")
        }

    async def until(self, server: str, state: str, within: float = 60.0) -> None:
        """Wait until HAProxy sees ``server`` in ``state`` (UP or DOWN)."""
        deadline = time.monotonic() + within
        while (await self.states()).get(server) != state:
            if time.monotonic() > deadline:
                raise BenchFailure(f"HAProxy never saw {server} {state}: {await self.states()}")
            await asyncio.sleep(0.05)


def version() -> str:
    out = subprocess.run([haproxy_binary(), "-v"], capture_output=True, text=True).stdout
    return out.split()[2] if out.startswith("HAProxy version") else "?"


@contextlib.asynccontextmanager
async def haproxy(
    port: int,
    servers: Mapping[str, int],
    check: str = "/readyz",
    *,
    front: Proxying | None = None,
) -> AsyncIterator[HAProxy]:
    """HAProxy in the foreground on 127.0.0.1:``port``, stopped on the way out."""
    with tempfile.TemporaryDirectory(prefix="atrium-haproxy-") as tmp:
        directory = Path(tmp)
        admin = directory / "admin.sock"
        path = directory / "haproxy.cfg"
        path.write_text(config(port, servers, admin, check, front=front))
        argv = [haproxy_binary(), "-db", "-f", str(path)]
        child = await spawn("HAProxy", argv, directory / "haproxy.log")
        try:

            async def listening() -> bool:
                return admin.exists()

            await child.until(listening, START_TIMEOUT_S, "started")
            yield HAProxy(port, admin, child)
        finally:
            await child.stop(10.0)
