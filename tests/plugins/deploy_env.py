"""What the deployments tests share: an app with PinCompute and deployments over an emulated
cluster, served by uvicorn on a real port, and webhooks sent and signed as GitHub sends them."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import hmac
import json
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
import yaml

from plugins.deployments import DeploymentsPlugin
from plugins.deployments.settings import DeploymentSettings
from plugins.pincompute import PinComputePlugin
from plugins.pincompute.settings import ComputeSettings
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client
from tests.kube import Cluster, kubeconfig, start_clusters

GITHUB_SECRET = "It's a Secret to Everybody"
WEBHOOK_SECRET = "another secret, for other CD systems"
CD_SECRET = "what Atrium signs its own calls with"
RECORDED = Path(__file__).parent.parent / "fixtures" / "github" / "deployment_status.json"

ORG = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a}
spec: {type: team, members: [alice], children: [team-a-sre]}
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a-sre}
spec: {type: team, members: [bob]}
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-b}
spec: {type: team, members: [mallory]}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: checkout
  annotations: {github.com/project-slug: juniper/checkout-service}
spec:
  type: service
  lifecycle: production
  owner: team-a
  pipeline:
    - name: canary
      pinApp: {cluster: east, namespace: shop, name: checkout-canary}
    - name: staging
    - name: production
      pinApp: {cluster: east, namespace: shop, name: checkout}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: search
  annotations: {github.com/project-slug: juniper/search}
spec: {type: service, lifecycle: production, owner: team-b}
"""

LATE_COMPONENT = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: ledger
  annotations: {github.com/project-slug: juniper/ledger}
spec: {type: service, lifecycle: production, owner: team-a}
"""


def pinapp(name: str, image: str, replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "compute.atrium.dev/v1",
        "kind": "PinApp",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "annotations": {"atrium.dev/entity-ref": "component:default/checkout"},
        },
        "spec": {"image": image, "replicas": replicas},
        "status": {"replicas": replicas, "readyReplicas": replicas, "updatedReplicas": replicas},
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def eventually(check: Any, within: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


@asynccontextmanager
async def serving(client: Client, **options: Any) -> AsyncIterator[str]:
    """The client's app behind uvicorn on a free port (its lifespan already runs); ``options``
    are uvicorn's (``atrium.cli.uvicorn_options()`` for Atrium's own protocols)."""
    port = free_port()
    options = {"log_config": None, **options}
    server = uvicorn.Server(
        uvicorn.Config(client.app, host="127.0.0.1", port=port, lifespan="off", **options)
    )
    task = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: asyncio.sleep(0, server.started))
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


def github_event(
    event: str,
    *,
    deployment_id: int = 145988746,
    sha: str = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e",
    ref: str = "main",
    environment: str = "production",
    state: str | None = None,
    repository: str = "juniper/checkout-service",
    payload: dict[str, Any] | None = None,
    at: str = "2026-11-20T15:20:55Z",
    created_at: str = "2026-11-20T15:20:53Z",
) -> dict[str, Any]:
    """A ``deployment`` or ``deployment_status`` body in the shape GitHub sends (the recorded
    one, its values replaced)."""
    body: dict[str, Any] = copy.deepcopy(json.loads(RECORDED.read_text()))
    deployment = body["deployment"]
    deployment |= {
        "id": deployment_id,
        "sha": sha,
        "ref": ref,
        "environment": environment,
        "original_environment": environment,
        "payload": payload or {},
        "created_at": created_at,
    }
    body["repository"]["full_name"] = repository
    body["repository"]["name"] = repository.split("/")[-1]
    body["repository"]["html_url"] = f"https://github.com/{repository}"
    if event == "deployment":
        del body["deployment_status"]
        return body
    body["deployment_status"] |= {
        "state": state,
        "environment": environment,
        "created_at": at,
        "updated_at": at,
    }
    return body


class GitHub:
    """Sends webhooks as GitHub does: the JSON body, HMAC-SHA256 of it in
    X-Hub-Signature-256 (and the older SHA-1 one), a delivery GUID, the event's name."""

    def __init__(self, base: str, secret: str = GITHUB_SECRET) -> None:
        self.url = f"{base}/hooks/deployments/github"
        self.secret = secret
        self.http = httpx.AsyncClient(timeout=10)

    def headers(self, event: str, body: bytes, delivery: str | None = None) -> dict[str, str]:
        key = self.secret.encode()
        return {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/5e0f3a1",
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-GitHub-Hook-ID": "492511413",
            "X-GitHub-Hook-Installation-Target-Type": "repository",
            "X-GitHub-Hook-Installation-Target-ID": "186853002",
            "X-Hub-Signature": "sha1=" + hmac.new(key, body, hashlib.sha1).hexdigest(),
            "X-Hub-Signature-256": "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest(),
        }

    async def send(
        self, event: str, body: dict[str, Any] | bytes, *, delivery: str | None = None
    ) -> httpx.Response:
        raw = body if isinstance(body, bytes) else json.dumps(body, indent=2).encode()
        return await self.http.post(
            self.url, content=raw, headers=self.headers(event, raw, delivery)
        )

    async def close(self) -> None:
        await self.http.aclose()


def signed(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class Env:
    def __init__(self, client: Client, east: Cluster, base: str) -> None:
        self.client, self.east, self.base = client, east, base
        self.github = GitHub(base)

    async def hook(self, body: dict[str, Any], delivery: str | None = None) -> httpx.Response:
        """Atrium's own webhook, signed with its secret."""
        raw = json.dumps(body).encode()
        return await self.github.http.post(
            f"{self.base}/hooks/deployments",
            content=raw,
            headers={
                "Content-Type": "application/json",
                "X-Atrium-Delivery": delivery or str(uuid.uuid4()),
                "X-Atrium-Signature-256": signed(WEBHOOK_SECRET, raw),
            },
        )

    async def deploys(self, ref: str = "component:checkout", **kw: Any) -> list[dict[str, Any]]:
        query = """query($r: String!) { entity(ref: $r) { ... on Component {
            deployments(first: 100) { totalCount edges { node {
              id state stage actor startedAt finishedAt isRollback source url message
              release { version commitSha commitTime artifact buildUrl createdBy } } } } } } }"""
        body = await self.client.gql(query, {"r": ref}, **kw)
        return [e["node"] for e in body["data"]["entity"]["deployments"]["edges"]]


@asynccontextmanager
async def deploy_env(
    make_client: AppFactory,
    tmp_path: Path,
    *,
    app_settings: dict[str, Any] | None = None,
    **deployment_settings: Any,
) -> AsyncIterator[Env]:
    async with start_clusters("east") as (east,):
        await east.put("pinapps", "shop", pinapp("checkout", "registry.example/checkout:1.0"))
        await east.put(
            "pinapps", "shop", pinapp("checkout-canary", "registry.example/checkout:1.0", 1)
        )
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig(east)))
        compute = ComputeSettings(
            kubeconfig=str(path), compute_watch_timeout=2, compute_request_timeout=1.0
        )
        settings = DeploymentSettings(
            **{
                "deployments_github_secret": GITHUB_SECRET,
                "deployments_webhook_secret": WEBHOOK_SECRET,
                "deployments_cd_secret": CD_SECRET,
                "deployments_check_interval": 0.1,
                "deployments_max_body": 64 * 1024,
                **deployment_settings,
            }
        )
        client: Client = await make_client(
            plugins=[PinComputePlugin(compute), DeploymentsPlugin(settings)],
            **(app_settings or {}),
        )
        assert not (await apply_batch(client.services.db, parse_documents(ORG, "org.yaml"))).errors

        async def synced() -> bool:
            clusters = (await client.gql("{ clusters { synced } }"))["data"]["clusters"]
            return bool(clusters) and all(c["synced"] for c in clusters)

        await eventually(synced)
        async with serving(client) as base:
            env = Env(client, east, base)
            try:
                yield env
            finally:
                await env.github.close()
