"""Sign-in with a real OpenID provider (npm oidc-provider, tests/oidc.py): the authorization
code flow with PKCE, sessions in PostgreSQL and in Redis, sign-out here and at the provider,
and every way a sign-in can be tampered with refused with a page that says why."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
import pytest

from tests.conftest import EXAMPLES, AppFactory, Client
from tests.oidc import Provider, log_in_at_provider, openid_provider, query_of

PUBLIC = "http://atrium.test"
VIEWER = "{ viewer { ref authenticatedBy scopes } }"


@pytest.fixture(scope="module")
async def provider() -> AsyncIterator[Provider]:
    async with openid_provider(f"{PUBLIC}/auth/callback", PUBLIC) as started:
        yield started


@pytest.fixture
async def browser() -> AsyncIterator[httpx.AsyncClient]:
    """The person's browser at the provider (its cookies there)."""
    async with httpx.AsyncClient() as client:
        yield client


async def atrium(make_client: AppFactory, provider: Provider, **overrides: Any) -> Client:
    client: Client = await make_client(**provider.settings(PUBLIC), **overrides)
    from sources.catalog.documents import read_paths
    from sources.catalog.store import apply_batch

    await apply_batch(client.services.db, read_paths([EXAMPLES / "org.yaml"]))
    return client


async def start(atrium: Client, next_path: str = "/") -> httpx.Response:
    response = await atrium.get("/auth/login", params={"next": next_path})
    assert response.status_code == 303, response.text
    return response


async def sign_in(
    atrium: Client, browser: httpx.AsyncClient, login: str, next_path: str = "/"
) -> httpx.Response:
    """The whole sign-in: Atrium's login, the provider's form, Atrium's callback."""
    authorize = (await start(atrium, next_path)).headers["location"]
    back = await log_in_at_provider(browser, authorize, login)
    assert back.startswith(f"{PUBLIC}/auth/callback?"), back
    return await atrium.get(back)


async def viewer(atrium: Client) -> dict[str, Any]:
    body = await atrium.gql(VIEWER)
    return dict(body["data"]["viewer"])


@pytest.mark.parametrize("store", ["postgresql", "redis"])
async def test_a_person_signs_in_lands_where_they_asked_and_signs_out(
    make_client: AppFactory,
    provider: Provider,
    browser: httpx.AsyncClient,
    store: str,
    redis_url: str,
    cache_prefix: str,
) -> None:
    extra = {"redis_url": redis_url, "cache_prefix": cache_prefix} if store == "redis" else {}
    client = await atrium(make_client, provider, **extra)
    assert (await viewer(client))["ref"] is None

    authorize = (await start(client, "/catalog/default/component/checkout?tab=deploys")).headers[
        "location"
    ]
    asked = query_of(authorize)
    assert authorize.startswith(f"{provider.issuer}/auth?")
    assert asked["code_challenge_method"] == "S256" and len(asked["code_challenge"]) == 43
    assert asked["redirect_uri"] == f"{PUBLIC}/auth/callback"
    assert asked["scope"] == "openid profile email" and asked["nonce"] and asked["state"]
    back = await log_in_at_provider(browser, authorize, "amelia.chen")
    landed = await client.get(back)
    assert landed.status_code == 303, landed.text
    assert landed.headers["location"] == "/catalog/default/component/checkout?tab=deploys"
    cookie = landed.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=lax" in cookie.lower()

    assert await viewer(client) == {
        "ref": "user:default/amelia.chen",
        "authenticatedBy": "session",
        "scopes": ["read", "write"],
    }
    # The session is kept by its hash only.
    session_id = client.cookies["atrium_session"]
    if store == "postgresql":
        stored = await client.services.db.fetch("select id_hash from sessions")
        assert [r["id_hash"] for r in stored] != [session_id] and len(stored) == 1

    out = await client.post("/auth/logout", headers={"origin": PUBLIC})
    assert out.status_code == 303
    end = out.headers["location"]
    assert end.startswith(f"{provider.issuer}/session/end?")
    assert query_of(end)["post_logout_redirect_uri"] == PUBLIC
    assert query_of(end)["id_token_hint"].count(".") == 2
    assert "atrium_session" not in client.cookies
    # The old cookie is worth nothing now, on this replica and any other.
    client.cookies.set("atrium_session", session_id, domain="atrium.test")
    assert (await viewer(client))["ref"] is None
    # The provider ends its session too, and sends the browser back to Atrium.
    ended = await browser.get(end)
    assert ended.status_code == 200 and "logout" in ended.text.lower()
    form = re.search(r'<form[^>]*action="([^"]+)"', ended.text)
    assert form is not None
    xsrf = re.search(r'name="xsrf" value="([^"]+)"', ended.text)
    assert xsrf is not None
    confirmed = await browser.post(
        provider.issuer + form[1] if form[1].startswith("/") else form[1],
        data={"xsrf": xsrf[1], "logout": "yes"},
    )
    assert confirmed.status_code in (302, 303)
    assert confirmed.headers["location"].startswith(PUBLIC)


async def test_a_session_works_on_every_replica_and_ends_on_all_at_once(
    make_client: AppFactory,
    provider: Provider,
    browser: httpx.AsyncClient,
    redis_url: str,
    cache_prefix: str,
) -> None:
    shared = {"redis_url": redis_url, "cache_prefix": cache_prefix}
    first = await atrium(make_client, provider, **shared)
    await sign_in(first, browser, "priya.raman")
    second: Client = await make_client(**provider.settings(PUBLIC), **shared)
    second.cookies = httpx.Cookies(first.cookies)
    assert (await viewer(second))["ref"] == "user:default/priya.raman"  # now kept in process

    assert (await first.post("/auth/logout", headers={"origin": PUBLIC})).status_code == 303
    # The other replica hears of it on the caches' channel, and forgets the session.
    for _ in range(100):
        if (await viewer(second))["ref"] is None:
            break
        await asyncio.sleep(0.02)
    assert (await viewer(second))["ref"] is None


async def test_a_person_the_directory_does_not_know_may_read_not_change(
    make_client: AppFactory, provider: Provider, browser: httpx.AsyncClient
) -> None:
    client = await atrium(make_client, provider)
    await sign_in(client, browser, "zoe.stranger")
    assert await viewer(client) == {
        "ref": "user:default/zoe.stranger",
        "authenticatedBy": "session",
        "scopes": ["read"],
    }
    body = await client.gql(
        'mutation { starEntity(ref: "group:default/checkout-team") { ref } }', expect_errors=True
    )
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert await client.services.db.fetchval("select count(*) from stars") == 0


async def test_an_email_claim_maps_through_the_directory(
    make_client: AppFactory, provider: Provider, browser: httpx.AsyncClient
) -> None:
    client = await atrium(make_client, provider, oidc_user_claim="email")
    await sign_in(client, browser, "daniel.kowalski")
    assert (await viewer(client))["ref"] == "user:default/daniel.kowalski"
    # Someone else's address with the same local part is not that person.
    client.cookies.clear()
    browser.cookies.clear()  # signed out at the provider too
    await sign_in(client, browser, "daniel.kowalski@elsewhere.example")
    found = await viewer(client)
    assert found["ref"] == "user:default/daniel.kowalski-elsewhere.example"
    assert found["scopes"] == ["read"]


@pytest.mark.parametrize(
    "target",
    [
        "//evil.example/",
        "/\\evil.example",
        "https://evil.example/",
        "javascript:alert(1)",
        "/\t/evil.example",
        "/catalog\x00",
        "evil.example",
    ],
)
async def test_next_only_leads_to_atriums_own_pages(
    make_client: AppFactory, provider: Provider, target: str
) -> None:
    client = await atrium(make_client, provider)
    response = await client.get("/auth/login?" + urlencode({"next": target}))
    assert response.status_code == 400
    assert "only be sent to one of Atrium" in response.text
    assert "location" not in response.headers


async def test_a_tampered_state_is_refused(
    make_client: AppFactory, provider: Provider, browser: httpx.AsyncClient
) -> None:
    client = await atrium(make_client, provider)
    back = await log_in_at_provider(
        browser, (await start(client)).headers["location"], "amelia.chen"
    )
    state = query_of(back)["state"]
    tampered = back.replace(state, state[:-2] + ("AA" if not state.endswith("AA") else "BB"))
    response = await client.get(tampered)
    assert response.status_code == 400 and "This sign-in has ended" in response.text
    assert (await viewer(client))["ref"] is None


async def test_a_callback_carried_to_another_browser_is_refused(
    make_client: AppFactory, provider: Provider, browser: httpx.AsyncClient
) -> None:
    """Login CSRF: an attacker's own sign-in, finished in the victim's browser."""
    attacker = await atrium(make_client, provider)
    back = await log_in_at_provider(browser, (await start(attacker)).headers["location"], "mallory")
    victim: Client = await make_client(**provider.settings(PUBLIC))
    response = await victim.get(back)
    assert response.status_code == 400 and "started elsewhere" in response.text
    assert (await viewer(victim))["ref"] is None


async def test_an_id_token_for_another_sign_in_is_refused_by_its_nonce(
    make_client: AppFactory, provider: Provider, browser: httpx.AsyncClient
) -> None:
    """Swap sessions: the code of one sign-in delivered with the state of another. The
    verifier no longer matches (PKCE), and were it accepted the nonce would not."""
    client = await atrium(make_client, provider)
    first = await log_in_at_provider(
        browser, (await start(client)).headers["location"], "amelia.chen"
    )
    second = await log_in_at_provider(
        browser, (await start(client)).headers["location"], "amelia.chen"
    )
    swapped = f"{PUBLIC}/auth/callback?" + urlencode(
        {"code": query_of(first)["code"], "state": query_of(second)["state"]}
    )
    response = await client.get(swapped)
    assert response.status_code == 400
    assert "refused this sign-in" in response.text and "invalid_grant" in response.text
    assert (await viewer(client))["ref"] is None


async def _forge_pending_sign_in(client: Client, back: str, **changes: str) -> None:
    """Change what Atrium kept of the sign-in the provider sends ``back`` to (as an attacker
    who could write the store would), before the callback arrives."""
    from sources.sessions import secret_key

    store = client.services.identity.store
    key = secret_key(query_of(back)["state"])
    pending = await store.take(key)
    assert pending is not None
    await store.begin(key, dataclasses.replace(pending, **changes), 60)


async def test_a_tampered_pkce_verifier_is_refused_by_the_provider(
    make_client: AppFactory, provider: Provider, browser: httpx.AsyncClient
) -> None:
    client = await atrium(make_client, provider)
    back = await log_in_at_provider(
        browser, (await start(client)).headers["location"], "amelia.chen"
    )
    await _forge_pending_sign_in(client, back, verifier="x" * 64)
    response = await client.get(back)
    assert response.status_code == 400 and "invalid_grant" in response.text
    assert (await viewer(client))["ref"] is None


async def test_a_nonce_that_does_not_match_is_refused(
    make_client: AppFactory, provider: Provider, browser: httpx.AsyncClient
) -> None:
    client = await atrium(make_client, provider)
    back = await log_in_at_provider(
        browser, (await start(client)).headers["location"], "amelia.chen"
    )
    await _forge_pending_sign_in(client, back, nonce="another")
    response = await client.get(back)
    assert response.status_code == 400
    assert "nonce is not the one of this sign-in" in response.text
    assert (await viewer(client))["ref"] is None


async def test_a_replayed_code_is_refused_with_a_page_not_a_500(
    make_client: AppFactory, provider: Provider, browser: httpx.AsyncClient
) -> None:
    client = await atrium(make_client, provider)
    back = await log_in_at_provider(
        browser, (await start(client)).headers["location"], "amelia.chen"
    )
    assert (await client.get(back)).status_code == 303
    # The same callback again: its state is spent.
    again = await client.get(back)
    assert again.status_code == 400 and "already used" in again.text
    # The same code under a fresh state reaches the provider, which refuses it.
    fresh = await log_in_at_provider(
        browser, (await start(client)).headers["location"], "amelia.chen"
    )
    replay = f"{PUBLIC}/auth/callback?" + urlencode(
        {"code": query_of(back)["code"], "state": query_of(fresh)["state"]}
    )
    response = await client.get(replay)
    assert response.status_code == 400 and "invalid_grant" in response.text
    assert response.headers["content-type"].startswith("text/html")


async def test_the_provider_refusing_is_a_page(make_client: AppFactory, provider: Provider) -> None:
    client = await atrium(make_client, provider)
    state = query_of((await start(client)).headers["location"])["state"]
    response = await client.get(
        "/auth/callback",
        params={"state": state, "error": "access_denied", "error_description": "End-User aborted"},
    )
    assert response.status_code == 400 and "End-User aborted" in response.text


async def test_logout_from_another_origin_is_refused(
    make_client: AppFactory, provider: Provider, browser: httpx.AsyncClient
) -> None:
    client = await atrium(make_client, provider)
    await sign_in(client, browser, "amelia.chen")
    for headers in ({"origin": "https://evil.example"}, {}):
        refused = await client.post("/auth/logout", headers=headers)
        assert refused.status_code == 403
    assert (await viewer(client))["ref"] == "user:default/amelia.chen"


async def test_production_cookies_are_secure_and_host_only(
    make_client: AppFactory, provider: Provider, browser: httpx.AsyncClient
) -> None:
    client = await atrium(make_client, provider, mode="production")
    started = await start(client)
    assert re.match(r"__Host-atrium_signin=[^;]+; .*Secure", started.headers["set-cookie"])
    binding = started.headers["set-cookie"].split(";")[0].split("=", 1)[1]
    back = await log_in_at_provider(browser, started.headers["location"], "amelia.chen")
    landed = await client.get(back, headers={"cookie": f"__Host-atrium_signin={binding}"})
    cookie = landed.headers["set-cookie"]
    assert cookie.startswith("__Host-atrium_session=")
    assert all(f in cookie for f in ("HttpOnly", "Path=/", "SameSite=lax", "Secure"))
    assert "Domain" not in cookie
    assert urlsplit(landed.headers["location"]).path == "/"


async def sign_in_with_secure_cookies(
    client: Client, browser: httpx.AsyncClient, login: str
) -> str:
    """A sign-in in production, where cookies are Secure (httpx keeps them off plain HTTP, a
    browser on 127.0.0.1 does not): the session cookie's value."""
    started = await start(client)
    binding = started.cookies["__Host-atrium_signin"]
    back = await log_in_at_provider(browser, started.headers["location"], login)
    landed = await client.get(back, headers={"cookie": f"__Host-atrium_signin={binding}"})
    assert landed.status_code == 303, landed.text
    return str(landed.cookies["__Host-atrium_session"])


async def test_pages_and_answers_are_kept_per_person(
    make_client: AppFactory, provider: Provider, browser: httpx.AsyncClient, tmp_path: Path
) -> None:
    """The page cache, the response cache and browsers' caches never hand a signed-in
    person's page or answer to a visitor or to someone else, nor a visitor's to them."""
    from tests.ssr.test_pages import _build, _plugins

    build = _build(tmp_path)
    client = await atrium(
        make_client, provider, mode="production", plugins=_plugins(), web_dir=build
    )
    amelia = await sign_in_with_secure_cookies(client, browser, "amelia.chen")
    browser.cookies.clear()
    priya = await sign_in_with_secure_cookies(client, browser, "priya.raman")

    def as_(session: str | None) -> dict[str, str]:
        return {"cookie": f"__Host-atrium_session={session}"} if session else {}

    visitor = await client.get("/")
    assert "Sign in" in visitor.text and "Sign out" not in visitor.text
    first = await client.get("/", headers=as_(amelia) | {"if-none-match": visitor.headers["etag"]})
    assert first.status_code == 200
    assert "Amelia Chen" in first.text and "Sign out" in first.text
    assert first.headers["cache-control"] == "private, no-cache"
    assert "Cookie" in first.headers["vary"]
    again = await client.get("/", headers={"if-none-match": first.headers["etag"]})
    assert again.status_code == 200 and "Amelia Chen" not in again.text
    assert again.headers["etag"] == visitor.headers["etag"]
    other = await client.get("/", headers=as_(priya) | {"if-none-match": first.headers["etag"]})
    assert other.status_code == 200
    assert "Priya Raman" in other.text and "Amelia Chen" not in other.text

    # The API's kept answers (private, a minute): the catalog's viewer, one person after another.
    manifest = json.loads((build / "persisted-query-manifest.json").read_text())
    mine = next(op["body"] for op in manifest["operations"] if op["name"] == "CatalogViewer")
    for session, expected in (
        (amelia, "user:default/amelia.chen"),
        (None, None),
        (priya, "user:default/priya.raman"),
        (amelia, "user:default/amelia.chen"),
        (None, None),
    ):
        answer = await client.persisted_get(mine, headers=as_(session))
        assert answer.json()["data"]["viewer"]["ref"] == expected
        assert answer.headers["cache-control"] == "max-age=60, private"
        assert "Cookie" in answer.headers["vary"]


def test_answers_vary_with_the_cookie_wherever_people_sign_in(provider: Provider) -> None:
    from graph.http_output import vary_header
    from graph.settings import Settings

    signing_in = Settings(mode="production", **provider.settings("https://atrium.example"))
    assert b"Cookie" in vary_header(signing_in)[1]
    assert b"Cookie" not in vary_header(Settings(mode="production"))[1]


async def test_a_signed_in_request_costs_no_round_trip_to_the_store(
    make_client: AppFactory, provider: Provider, browser: httpx.AsyncClient
) -> None:
    client = await atrium(make_client, provider)
    await sign_in(client, browser, "amelia.chen")
    store = client.services.identity.store
    touch = store.touch
    reads: list[str] = []

    async def counting(key: str, idle: float) -> Any:
        reads.append(key)
        return await touch(key, idle)

    store.touch = counting
    client.services.identity.sessions.clear_local()
    for _ in range(10):
        assert (await viewer(client))["ref"] == "user:default/amelia.chen"
    assert len(reads) == 1  # then kept in process for 10 s
