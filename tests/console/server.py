"""`atrium serve` for the console's browser tests: a uvicorn subprocess on a free port, a
database of its own with the demo organisation, the console's build, and an emulated cluster
(tests/kube.py) behind PinCompute through a kubeconfig, as in production."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import httpx
import yaml

from sources.catalog.documents import read_paths
from sources.catalog.store import apply_batch
from sources.db import Database
from tests.conftest import EXAMPLES, ROOT, _admin, _with_database
from tests.kube import Cluster, kubeconfig

WEB_DIST = ROOT / "web" / "dist"
DEPLOY_SECRET = "the console tests' deploy events"
READY_WITHIN = 60.0


@dataclass(frozen=True)
class Served:
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


@asynccontextmanager
async def demo_database(pg_admin_url: str, template_db: str) -> AsyncIterator[str]:
    """A migrated database of its own with the demo organisation imported; dropped after."""
    name = f"atrium_t_{uuid.uuid4().hex[:12]}"
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'create database "{name}" template "{template_db}"')
    url = _with_database(pg_admin_url, name)
    try:
        db = await Database.connect(url, min_size=1, max_size=2)
        try:
            result = await apply_batch(db, read_paths([EXAMPLES]))
            assert not result.errors, result.errors
        finally:
            await db.close()
        yield url
    finally:
        async with _admin(pg_admin_url) as conn:
            await conn.execute(f'drop database if exists "{name}" with (force)')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _environment(
    tmp: Path,
    database_url: str,
    clusters: tuple[Cluster, ...],
    mode: str,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """The server's environment: none of the caller's ATRIUM_ variables, a kubeconfig naming
    the emulated clusters, and the browser (on 127.0.0.1) as the trusted proxy."""
    config = tmp / "kubeconfig"
    config.write_text(yaml.safe_dump(kubeconfig(*clusters)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
    # This checkout's code, whatever the editable install last mapped (a new package, ssr/).
    path = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return (
        env
        | {
            "PYTHONPATH": path,
            "ATRIUM_MODE": mode,
            "ATRIUM_DATABASE_URL": database_url,
            "ATRIUM_WEB_DIR": str(WEB_DIST),
            "ATRIUM_KUBECONFIG": str(config),
            # The browser is the proxy: its X-Forwarded-User is believed, as production's is.
            "ATRIUM_TRUSTED_PROXIES": "127.0.0.1",
            "ATRIUM_COMPUTE_WATCH_TIMEOUT": "5",
            "ATRIUM_COMPUTE_REQUEST_TIMEOUT": "2",
            # Deploy events the tests send, signed; rollouts checked often.
            "ATRIUM_DEPLOYMENTS_WEBHOOK_SECRET": DEPLOY_SECRET,
            "ATRIUM_DEPLOYMENTS_CHECK_INTERVAL": "0.2",
            # Pages wait for every panel: a test asserts what the page holds, not how fast.
            "ATRIUM_SSR_PANEL_BUDGET": "5",
            # No balancer to leave: SIGTERM stops it at once.
            "ATRIUM_SHUTDOWN_GRACE": "0",
        }
        | (extra or {})
    )


def _open_log(path: Path) -> BinaryIO:
    return path.open("wb")


@asynccontextmanager
async def atrium_serve(
    database_url: str,
    clusters: tuple[Cluster, ...],
    *,
    mode: str = "development",
    extra: dict[str, str] | None = None,
    port: int | None = None,
) -> AsyncIterator[Served]:
    """`atrium serve` on 127.0.0.1, ready (and its clusters listed), stopped on the way out;
    on ``port`` when given (a replica restarted where browsers know it), else a free one.

    Asynchronous throughout: the emulated clusters answer from this same event loop."""
    if not (WEB_DIST / ".vite" / "manifest.json").is_file():
        raise AssertionError("the console is not built (web/dist): run `make web`")
    with tempfile.TemporaryDirectory(prefix="atrium-console-") as tmp:
        env = _environment(Path(tmp), database_url, clusters, mode, extra)
        log = Path(tmp, "server.log")
        # A free port may be taken before the server binds it: then another.
        for _ in range(1 if port is not None else 3):
            listen = port or _free_port()
            with _open_log(log) as out:
                process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "atrium.cli",
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(listen),
                    cwd=tmp,
                    env=env,
                    stdout=out,
                    stderr=asyncio.subprocess.STDOUT,
                )
            served = Served(f"http://127.0.0.1:{listen}", log, mode)
            try:
                if await _ready(process, served, len(clusters)):
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


async def _ready(process: asyncio.subprocess.Process, served: Served, clusters: int) -> bool:
    """True once /readyz answers and every cluster is synced (by /metrics, which production
    mode answers too); False if the port was taken."""
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
                ready = await client.get(served.url("/readyz"))
                if ready.status_code == 200:
                    metrics = (await client.get(served.url("/metrics"))).text
                    healthy = re.findall(
                        r"^atrium_compute_cluster_healthy\{.*\} 1\.0$", metrics, re.M
                    )
                    if len(healthy) >= clusters:
                        return True
            except httpx.TransportError:
                pass
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(
                    f"atrium serve was not ready in {READY_WITHIN:.0f} s:\n{served.log_text()}"
                )
            await asyncio.sleep(0.1)
