"""A real OpenID provider for tests: npm oidc-provider (tests/clients/oidc_provider.mjs) run by
Node on a free port, stopped on the way out; and a person going through its login form with
httpx, as a browser would."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx

from tests.conftest import ROOT

SCRIPT = ROOT / "tests" / "clients" / "oidc_provider.mjs"
AUDIENCE = "urn:atrium:api"
MACHINE_GROUP = "payments-squad"  # a team of the demo organisation that owns services


@dataclass
class Provider:
    issuer: str
    secret: str
    machine_secret: str
    audience: str = AUDIENCE
    group: str = MACHINE_GROUP

    def settings(self, public_url: str) -> dict[str, Any]:
        """Atrium's settings for this provider."""
        return {
            "oidc_issuer": self.issuer,
            "oidc_client_id": "atrium",
            "oidc_client_secret": self.secret,
            "oidc_audience": self.audience,
            "public_url": public_url,
        }

    async def configure(self, redirect_uri: str, post_logout_uri: str) -> None:
        async with httpx.AsyncClient() as http:
            response = await http.post(
                f"{self.issuer}/__configure",
                json={"redirectUri": redirect_uri, "postLogoutUri": post_logout_uri},
            )
            assert response.status_code == 204

    async def rotate(self) -> str:
        """Sign with a new key from now on; the new key id."""
        async with httpx.AsyncClient() as http:
            response = await http.post(f"{self.issuer}/__rotate")
            return str(response.json()["kid"])

    async def jwks(self) -> dict[str, Any]:
        async with httpx.AsyncClient() as http:
            return dict((await http.get(f"{self.issuer}/jwks")).json())

    async def sign(self, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
        """A JWT signed with the provider's current key, with exactly these claims."""
        async with httpx.AsyncClient() as http:
            response = await http.post(
                f"{self.issuer}/__sign", json={"claims": claims, "header": header or {}}
            )
            return str(response.json()["token"])

    async def machine_token(self) -> str:
        """A client-credentials access token of the machine client (a JWT for Atrium)."""
        async with httpx.AsyncClient() as http:
            response = await http.post(
                f"{self.issuer}/token",
                data={"grant_type": "client_credentials", "scope": "read write"},
                auth=("ci-bot", self.machine_secret),
            )
            assert response.status_code == 200, response.text
            return str(response.json()["access_token"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def openid_provider(
    redirect_uri: str = "http://atrium.test/auth/callback",
    post_logout_uri: str = "http://atrium.test",
) -> AsyncIterator[Provider]:
    port = _free_port()
    provider = Provider(f"http://127.0.0.1:{port}", "the tests' client secret", "ci-bot secret")
    config = {
        "redirectUri": redirect_uri,
        "postLogoutUri": post_logout_uri,
        "secret": provider.secret,
        "machineSecret": provider.machine_secret,
        "audience": provider.audience,
        "group": provider.group,
    }
    process = await asyncio.create_subprocess_exec(
        "node",
        str(SCRIPT),
        str(port),
        json.dumps(config),
        cwd=SCRIPT.parent,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        assert json.loads(line or b"{}").get("ready") == provider.issuer, line
        yield provider
    finally:
        if process.returncode is None:
            process.terminate()
            await asyncio.wait_for(process.wait(), 10)


async def log_in_at_provider(browser: httpx.AsyncClient, authorize_url: str, login: str) -> str:
    """Go through the provider's login form from its authorization URL, as a person; the URL
    the provider sends the browser back to (Atrium's callback, with code and state)."""
    url = authorize_url
    for _ in range(10):
        response = await browser.get(url)
        if response.status_code in (302, 303):
            url = urljoin(url, response.headers["location"])
            if not url.startswith(browser_issuer(authorize_url)):
                return url
            continue
        assert response.status_code == 200, response.text
        action = re.search(r'<form[^>]*action="([^"]+)"', response.text)
        assert action is not None, response.text
        prompt = re.search(r'name="prompt" value="(\w+)"', response.text)
        form = {"prompt": prompt[1] if prompt else "login", "login": login, "password": "any"}
        submitted = await browser.post(urljoin(url, action[1]), data=form)
        assert submitted.status_code in (302, 303), submitted.text
        url = urljoin(url, submitted.headers["location"])
        if not url.startswith(browser_issuer(authorize_url)):
            return url
    raise AssertionError("the provider never sent the browser back")


def browser_issuer(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
