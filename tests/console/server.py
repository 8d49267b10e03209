"""`atrium serve` for the console's browser tests: a uvicorn subprocess on a free port, a
database of its own with the demo organisation, the console's build, and an emulated cluster
(tests/kube.py) behind PinCompute through a kubeconfig, as in production."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import yaml

from atrium.testing.databases import new_database_name
from atrium.testing.serve import Served
from atrium.testing.serve import atrium_serve as serve
from sources.catalog.store import apply_batch
from sources.db import Database
from tests.conftest import ROOT, _admin, _with_database, demo_batch
from tests.kube import Cluster, kubeconfig

WEB_DIST = ROOT / "web" / "dist"
DEPLOY_SECRET = "the console tests' deploy events"


def build_digest() -> str:
    """The console's build, every file's name and bytes: a test leaving it untouched."""
    digest = hashlib.sha256()
    for path in sorted(WEB_DIST.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(WEB_DIST)).encode() + path.read_bytes())
    return digest.hexdigest()


@asynccontextmanager
async def demo_database(pg_admin_url: str, template_db: str) -> AsyncIterator[str]:
    """A migrated database of its own with the demo organisation imported; dropped after."""
    async with empty_database(pg_admin_url, template_db) as url:
        db = await Database.connect(url, min_size=1, max_size=2)
        try:
            result = await apply_batch(db, demo_batch())
            assert not result.errors, result.errors
        finally:
            await db.close()
        yield url


@asynccontextmanager
async def empty_database(pg_admin_url: str, template_db: str) -> AsyncIterator[str]:
    """A migrated database of its own, its catalog empty; dropped after."""
    name = new_database_name()
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'create database "{name}" template "{template_db}"')
    try:
        yield _with_database(pg_admin_url, name)
    finally:
        async with _admin(pg_admin_url) as conn:
            await conn.execute(f'drop database if exists "{name}" with (force)')


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


@asynccontextmanager
async def atrium_serve(
    database_url: str,
    clusters: tuple[Cluster, ...],
    *,
    mode: str = "development",
    extra: dict[str, str] | None = None,
    port: int | None = None,
) -> AsyncIterator[Served]:
    """`atrium serve` (the test kit's) on 127.0.0.1, ready and its clusters listed, stopped on
    the way out; on ``port`` when given (a replica restarted where browsers know it), else a
    free one.

    Asynchronous throughout: the emulated clusters answer from this same event loop."""
    if not (WEB_DIST / ".vite" / "manifest.json").is_file():
        raise AssertionError("the console is not built (web/dist): run `make web`")

    async def clusters_synced(client: httpx.AsyncClient, served: Served) -> bool:
        # By /metrics, which production mode answers too.
        metrics = (await client.get(served.url("/metrics"))).text
        healthy = re.findall(r"^atrium_compute_cluster_healthy\{.*\} 1\.0$", metrics, re.M)
        return len(healthy) >= len(clusters)

    with tempfile.TemporaryDirectory(prefix="atrium-console-") as tmp:
        env = _environment(Path(tmp), database_url, clusters, mode, extra)
        async with serve(env, mode=mode, port=port, ready=clusters_synced) as served:
            yield served
