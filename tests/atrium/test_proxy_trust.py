"""A trusted proxy is known by its connection: the user header is believed only from a peer
address in ATRIUM_TRUSTED_PROXIES as the socket reports it, whatever X-Forwarded-For says.

Served as `atrium serve` serves (uvicorn with ``uvicorn_options``, Atrium's protocol) on a real
socket; the trusted proxy is 127.0.0.2 (on Linux the whole of 127.0.0.0/8 reaches this host),
and the impostor any other process on the host, connecting from 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.atrium.test_hot_http import serve
from tests.conftest import AppFactory

PROXY = "127.0.0.2"
VIEWER = "{ viewer { ref authenticatedBy } }"
STAR = 'mutation { starEntity(ref: "component:default/checkout") { ref } }'


@pytest.fixture
async def port(make_client: AppFactory) -> AsyncIterator[int]:
    client = await make_client(trusted_proxies=[PROXY])
    server, task, port = await serve(client.app, "atrium.http_protocol:http_protocol")
    try:
        yield port
    finally:
        server.should_exit = True
        await task


async def post(port: int, query: str, headers: dict[str, str], *, source: str) -> Any:
    transport = httpx.AsyncHTTPTransport(local_address=source)
    async with httpx.AsyncClient(transport=transport) as http:
        answer = await http.post(
            f"http://127.0.0.1:{port}/graphql", json={"query": query}, headers=headers
        )
    return answer.json()


@pytest.mark.parametrize("forwarded_for", [PROXY, f"203.0.113.7, {PROXY}", f"{PROXY}, {PROXY}"])
async def test_a_forwarded_for_header_does_not_make_a_trusted_proxy(
    port: int, forwarded_for: str
) -> None:
    impostor = {"X-Forwarded-User": "amelia.chen", "X-Forwarded-For": forwarded_for}
    viewer = await post(port, VIEWER, impostor, source="127.0.0.1")
    assert viewer["data"]["viewer"] == {"ref": None, "authenticatedBy": "anonymous"}, viewer
    acted = await post(port, STAR, impostor, source="127.0.0.1")
    assert acted["data"] is None, acted
    assert acted["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", acted


async def test_the_trusted_proxy_is_believed_from_its_own_address(port: int) -> None:
    proxy = {"X-Forwarded-User": "amelia.chen", "X-Forwarded-For": "203.0.113.7"}
    viewer = await post(port, VIEWER, proxy, source=PROXY)
    assert viewer["data"]["viewer"] == {
        "ref": "user:default/amelia.chen",
        "authenticatedBy": "proxy",
    }, viewer
    # Believed, she may act: the entity is unknown here, not the person.
    acted = await post(port, STAR, proxy, source=PROXY)
    assert acted["errors"][0]["extensions"]["code"] == "NOT_FOUND", acted
