"""The clients people point at Atrium, run for real against a uvicorn-served Atrium.

Apollo Client 4 (npm ``@apollo/client``, run by Node) configured as the console configures it,
and graphql-http's server audit, the GraphQL-over-HTTP conformance suite. Both talk over HTTP
to ``atrium serve`` (uvicorn, uvloop, httptools) started on a database of this module's own
with the demo organisation loaded. The npm packages come from ``tests/clients/package-lock.json``
(``make test`` runs ``npm ci``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import orjson
import pytest

from sources.auth import create_token
from sources.catalog.documents import read_paths
from sources.catalog.store import apply_batch
from sources.db import Database
from tests.conftest import EXAMPLES, _admin, _with_database

CLIENTS = Path(__file__).resolve().parent / "clients"
REF = "component:default/checkout"


@dataclass(frozen=True, slots=True)
class Served:
    url: str
    token: str
    log: Path


def node(script: str, *args: str) -> Any:
    if shutil.which("node") is None or not (CLIENTS / "node_modules").is_dir():
        pytest.fail("Node and tests/clients/node_modules are needed: run `make test`")
    result = subprocess.run(
        ["node", str(CLIENTS / script), *args],
        cwd=CLIENTS,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout, f"{script} printed nothing: {result.stderr}"
    return orjson.loads(result.stdout.splitlines()[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
async def served(pg_admin_url: str, template_db: str) -> AsyncIterator[Served]:
    """`atrium serve` on a database of this module's own, with the demo organisation."""
    name = f"atrium_t_{uuid.uuid4().hex[:12]}"
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'create database "{name}" template "{template_db}"')
    url = _with_database(pg_admin_url, name)
    db = await Database.connect(url, min_size=1, max_size=2)
    try:
        result = await apply_batch(db, read_paths([EXAMPLES]))
        assert not result.errors
        _, token = await create_token(db, "apollo", ["admin"], None)
    finally:
        await db.close()
    try:
        with atrium_serve(url) as (base, log):
            yield Served(f"{base}/graphql", token, log)
    finally:
        async with _admin(pg_admin_url) as conn:
            await conn.execute(f'drop database if exists "{name}" with (force)')


@contextmanager
def atrium_serve(database_url: str) -> Iterator[tuple[str, Path]]:
    """`atrium serve` on a free port, ready; its output in a file; stopped on the way out."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
    env["ATRIUM_DATABASE_URL"] = database_url
    with tempfile.TemporaryDirectory(prefix="atrium-served-") as tmp:
        log = Path(tmp, "server.log")
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "graph.cli", "serve", "--port", str(port)],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + 60
            while True:
                assert process.poll() is None, log.read_text()
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
            yield f"http://127.0.0.1:{port}", log
        finally:
            process.terminate()
            process.wait(timeout=30)


async def test_apollo_client_persisted_queries_over_get(served: Served) -> None:
    out = node("apollo.mjs", served.url, served.token, REF)
    assert "error" not in out, out.get("stack") or served.log.read_text()
    exchanges, steps = out["exchanges"], out["steps"]
    first = exchanges[steps["first"] : steps["second"]]
    second = exchanges[steps["second"] : steps["mutation"]]
    mutation = exchanges[steps["mutation"] : steps["end"]]

    # 1. A hash-only GET, with Apollo's own headers (JSON content type, no preflight header).
    miss, register = first
    assert miss["method"] == "GET" and miss["status"] == 200
    params = parse_qs(urlsplit(miss["url"]).query)
    assert "query" not in params
    digest = orjson.loads(params["extensions"][0])["persistedQuery"]["sha256Hash"]
    assert orjson.loads(params["variables"][0]) == {"ref": REF}
    assert miss["requestHeaders"]["content-type"] == "application/json"
    assert not {"apollo-require-preflight", "x-apollo-operation-name"} & set(miss["requestHeaders"])
    assert miss["responseBody"] == {
        "errors": [
            {
                "message": "PersistedQueryNotFound",
                "extensions": {"code": "PERSISTED_QUERY_NOT_FOUND"},
            }
        ]
    }
    assert miss["responseHeaders"]["cache-control"] == "private, no-cache, must-revalidate"
    # 2. The document sent with its hash, over POST.
    assert register["method"] == "POST" and register["status"] == 200
    assert register["body"]["extensions"]["persistedQuery"]["sha256Hash"] == digest
    assert "EntityPage" in register["body"]["query"]
    # 3. A new page: one GET by hash, answered from the response cache, HTTP-cacheable.
    [hit] = second
    assert hit["method"] == "GET" and hit["status"] == 200
    assert "query" not in parse_qs(urlsplit(hit["url"]).query)
    headers = hit["responseHeaders"]
    assert headers["cache-control"] == "max-age=60, public"
    assert headers["etag"].startswith('"') and headers["vary"] == "Accept, Authorization"
    assert "errors" not in hit["responseBody"]

    # The data is what a plain POST answers.
    async with httpx.AsyncClient() as client:
        # The document as Apollo sent it (it adds __typename to every selection).
        document = register["body"]["query"]
        plain = await client.post(served.url, json={"query": document, "variables": {"ref": REF}})
        again = await client.get(
            hit["url"],
            headers={"content-type": "application/json", "if-none-match": headers["etag"]},
        )
    expected = plain.json()["data"]
    assert expected["entity"]["owner"]["ref"] == "group:default/checkout-team"
    assert expected["entity"]["dependencies"]
    assert out["first"] == out["second"] == expected
    assert hit["responseBody"]["data"] == expected
    # A browser holding the answer revalidates it for nothing.
    assert again.status_code == 304 and again.content == b""

    # 4. A mutation through the same link: POSTs only (hash, then text), and it ran.
    assert mutation and {e["method"] for e in mutation} == {"POST"}
    assert mutation[-1]["status"] == 200
    assert out["mutation"]["applyEntities"]["created"] == ["component:default/made-by-apollo"]


async def test_a_mutation_over_get_is_refused(served: Served) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.get(
            served.url,
            params={
                "query": 'mutation { deleteEntity(ref: "component:default/checkout") { ref } }'
            },
            headers={"content-type": "application/json", "authorization": f"Bearer {served.token}"},
        )
    assert response.status_code == 405 and response.headers["allow"] == "POST"


async def test_graphql_http_audit(served: Served) -> None:
    """Every MUST and every SHOULD of graphql-http's audit passes. (Its check 80D8 expects the
    pre-2025 answer to a request without Accept, but Node's fetch sends `Accept: */*` there,
    which the current draft answers as application/json, as the audit wants.) The MAY checks
    that fail are GETs with no Content-Type and no preflight header: CSRF prevention refuses
    them, as Apollo Server does."""
    results = node("audit.mjs", served.url)
    by_id = {r["id"]: r for r in results}
    failed = {
        r["id"]: f"{r['name']}: {r['reason']}"
        for r in results
        if r["status"] != "ok" and r["name"].split()[0] in ("MUST", "SHOULD")
    }
    assert failed == {}
    may = {r["id"] for r in results if r["status"] != "ok"}
    assert may == {"5A70", "D6D5", "6A70"}, may
    for audit_id in may:
        assert by_id[audit_id]["name"].startswith("MAY")
    levels: dict[str, int] = {}
    for r in results:
        level = r["name"].split()[0]
        levels[level] = levels.get(level, 0) + (r["status"] == "ok")
    counts = {level: sum(r["name"].startswith(level) for r in results) for level in levels}
    print(
        "graphql-http audit: "
        + ", ".join(f"{level} {levels[level]}/{counts[level]}" for level in sorted(levels))
    )
    assert len(results) > 50
