"""Debian's HAProxy as the authenticating proxy in front of Atrium, configured as the README's
Access control says: it asks who people are (here from a userlist, as a company's single
sign-on would), drops any X-Forwarded-User a client sent and sets its own, and drops the
credentials it took (HAProxy passes the Authorization header on, and Atrium answers a Basic one
401: "the Authorization header must be a bearer token"); Atrium believes the
header from the proxy's address alone (ATRIUM_TRUSTED_PROXIES, the connection's peer as the
socket reports it). The proxy connects from 127.0.0.2 (on Linux the whole of 127.0.0.0/8
reaches this host); anything else on the host connects from 127.0.0.1."""

from __future__ import annotations

from typing import Any

import httpx

from atrium.testing.serve import atrium_serve, free_port
from bench.harness.haproxy import Proxying, haproxy

PROXY = "127.0.0.2"
VIEWER = {"query": "{ viewer { ref authenticatedBy } }"}
AUTHENTICATING = Proxying(
    sections=("userlist people", "    user amelia.chen insecure-password opensesame", ""),
    requests=(
        "http-request auth realm atrium unless { http_auth(people) }",
        # set-header replaces every X-Forwarded-User the client sent.
        "http-request set-header X-Forwarded-User %[http_auth_user]",
        # The credentials it took: passed on, Atrium would refuse a non-bearer Authorization.
        "http-request del-header Authorization",
    ),
    source=PROXY,
)


def viewer(answer: httpx.Response) -> Any:
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]["viewer"]


async def test_through_the_proxy_only_whom_it_authenticated_is_believed(
    database_url: str,
) -> None:
    environment = {"ATRIUM_DATABASE_URL": database_url, "ATRIUM_TRUSTED_PROXIES": PROXY}
    async with atrium_serve(environment) as served:
        port = int(served.base.rpartition(":")[2])
        async with haproxy(free_port(), {"atrium": port}, front=AUTHENTICATING) as proxy:
            await proxy.until("atrium", "UP")
            async with httpx.AsyncClient(base_url=proxy.base) as http:
                asked = await http.post("/graphql", json=VIEWER)
                assert asked.status_code == 401, asked.text
                assert asked.headers["www-authenticate"].startswith("Basic")
                wrong = await http.post("/graphql", json=VIEWER, auth=("amelia.chen", "guess"))
                assert wrong.status_code == 401, wrong.text
                # A header the client sent, naming someone else, does not get through.
                forged = {"X-Forwarded-User": "grace.okafor"}
                signed_in = await http.post(
                    "/graphql", json=VIEWER, headers=forged, auth=("amelia.chen", "opensesame")
                )
                assert viewer(signed_in) == {
                    "ref": "user:default/amelia.chen",
                    "authenticatedBy": "proxy",
                }
        # Straight to Atrium from elsewhere on the host, the header names no one.
        async with httpx.AsyncClient() as http:
            direct = await http.post(
                served.url("/graphql"), json=VIEWER, headers={"X-Forwarded-User": "amelia.chen"}
            )
        assert viewer(direct) == {"ref": None, "authenticatedBy": "anonymous"}
