"""The provider's access tokens as bearer tokens: a client-credentials JWT from a real provider
(npm oidc-provider) reads and writes as the group it names; every forged or broken one is a 401
that touches nothing; the provider rotating its keys is followed without a restart."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.conftest import AppFactory, Client, demo_batch
from tests.oidc import AUDIENCE, Provider, openid_provider

PUBLIC = "http://atrium.test"
VIEWER = "{ viewer { ref authenticatedBy scopes } }"
TARGET = "component:default/payments-gateway"  # owned by payments-squad
DELETE = f'mutation {{ deleteEntity(ref: "{TARGET}") {{ deleted }} }}'


@pytest.fixture(scope="module")
async def provider() -> AsyncIterator[Provider]:
    async with openid_provider() as started:
        yield started


@pytest.fixture
async def atrium(make_client: AppFactory, provider: Provider) -> Client:
    from sources.catalog.store import apply_batch

    client: Client = await make_client(**provider.settings(PUBLIC))
    result = await apply_batch(client.services.db, demo_batch())
    assert not result.errors
    return client


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict[str, Any], claims: dict[str, Any]) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"


def _hs256(header: dict[str, Any], claims: dict[str, Any], secret: bytes) -> str:
    signing_input = _unsigned(header, claims)
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(signature)}"


def claims_of(provider: Provider, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": provider.issuer,
        "aud": AUDIENCE,
        "sub": "ci-bot",
        "client_id": "ci-bot",
        "atrium_group": provider.group,
        "iat": now,
        "exp": now + 600,
        "jti": uuid.uuid4().hex,
    }
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


async def refused(client: Client, token: str) -> str:
    """A token's 401 message, after checking that a mutation with it changed and logged
    nothing."""
    headers = {"authorization": f"Bearer {token}"}
    read = await client.post("/graphql", json={"query": VIEWER}, headers=headers)
    assert read.status_code == 401, read.text
    assert read.headers["www-authenticate"] == "Bearer"
    write = await client.post("/graphql", json={"query": DELETE}, headers=headers)
    assert write.status_code == 401
    db = client.services.db
    assert await db.fetchval("select count(*) from entities where ref = $1", TARGET) == 1
    assert await db.fetchval("select count(*) from audit_log") == 0
    error = read.json()["errors"][0]
    assert error["extensions"]["code"] == "UNAUTHENTICATED"
    return str(error["message"])


async def test_a_client_credentials_token_reads_and_writes_as_its_group(
    atrium: Client, provider: Provider
) -> None:
    token = await provider.machine_token()
    assert (await atrium.gql(VIEWER, token=token))["data"]["viewer"] == {
        "ref": "group:default/payments-squad",
        "authenticatedBy": "token",
        "scopes": ["read", "write"],
    }
    body = await atrium.gql(DELETE, token=token)
    assert body["data"]["deleteEntity"]["deleted"] is True
    actor = await atrium.services.db.fetchval("select actor from audit_log")
    assert actor == "token:oidc:ci-bot (group:default/payments-squad)"
    # What another group owns stays out of reach.
    other = await atrium.gql(
        'mutation { deleteEntity(ref: "component:default/auth-service") { deleted } }',
        token=token,
        expect_errors=True,
    )
    assert other["errors"][0]["extensions"]["code"] == "FORBIDDEN"


async def test_a_verified_token_is_verified_once(atrium: Client, provider: Provider) -> None:
    identity = atrium.services.identity
    verify = identity.provider.verify
    calls: list[str] = []

    async def counting(token: str, **kwargs: Any) -> dict[str, Any]:
        calls.append(token)
        return dict(await verify(token, **kwargs))

    identity.provider.verify = counting
    token = await provider.machine_token()
    for _ in range(5):
        await atrium.gql(VIEWER, token=token)
    assert len(calls) == 1


async def test_a_token_without_a_group_may_only_read(atrium: Client, provider: Provider) -> None:
    token = await provider.sign(claims_of(provider, atrium_group=None))
    viewer = (await atrium.gql(VIEWER, token=token))["data"]["viewer"]
    assert viewer == {"ref": None, "authenticatedBy": "token", "scopes": ["read"]}
    body = await atrium.gql(DELETE, token=token, expect_errors=True)
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN", body


async def test_a_persons_token_is_that_person(atrium: Client, provider: Provider) -> None:
    known = await provider.sign(
        claims_of(provider, sub="amelia.chen", preferred_username="amelia.chen", atrium_group=None)
    )
    viewer = (await atrium.gql(VIEWER, token=known))["data"]["viewer"]
    assert viewer["ref"] == "user:default/amelia.chen" and viewer["scopes"] == ["read", "write"]
    stranger = await provider.sign(
        claims_of(provider, sub="zoe", preferred_username="zoe.stranger", atrium_group=None)
    )
    viewer = (await atrium.gql(VIEWER, token=stranger))["data"]["viewer"]
    assert viewer["ref"] == "user:default/zoe.stranger" and viewer["scopes"] == ["read"]


async def test_expired_tokens_are_refused(atrium: Client, provider: Provider) -> None:
    past = int(time.time()) - 120
    token = await provider.sign(claims_of(provider, iat=past - 600, exp=past))
    assert "it has expired" in await refused(atrium, token)


async def test_a_token_within_the_leeway_is_accepted(atrium: Client, provider: Provider) -> None:
    token = await provider.sign(claims_of(provider, exp=int(time.time()) - 5))
    assert (await atrium.gql(VIEWER, token=token))["data"]["viewer"]["scopes"] == ["read", "write"]


async def test_tokens_not_valid_yet_are_refused(atrium: Client, provider: Provider) -> None:
    token = await provider.sign(claims_of(provider, nbf=int(time.time()) + 300))
    assert "not valid yet" in await refused(atrium, token)


async def test_another_audience_is_refused(atrium: Client, provider: Provider) -> None:
    token = await provider.sign(claims_of(provider, aud="urn:another:api"))
    assert f"audience is not {AUDIENCE}" in await refused(atrium, token)


async def test_another_issuer_is_refused(atrium: Client, provider: Provider) -> None:
    token = await provider.sign(claims_of(provider, iss="https://evil.example"))
    assert "issuer is not" in await refused(atrium, token)


async def test_alg_none_is_refused(atrium: Client, provider: Provider) -> None:
    kid = (await provider.jwks())["keys"][0]["kid"]
    token = _unsigned({"alg": "none", "typ": "JWT", "kid": kid}, claims_of(provider)) + "."
    assert "algorithm 'none' is not accepted" in await refused(atrium, token)


async def test_hs256_keyed_with_the_public_key_is_refused(
    atrium: Client, provider: Provider
) -> None:
    jwk = (await provider.jwks())["keys"][0]
    public = jwt.PyJWK(jwk).key
    pem = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = {"alg": "HS256", "typ": "JWT", "kid": jwk["kid"]}
    for secret in (pem, json.dumps(jwk).encode(), jwk["n"].encode()):
        token = _hs256(header, claims_of(provider), secret)
        assert "algorithm 'HS256' is not accepted" in await refused(atrium, token)


async def test_a_key_the_issuer_does_not_publish_is_refused_and_cannot_hammer_it(
    atrium: Client, provider: Provider
) -> None:
    own = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    fetcher = atrium.services.identity.provider
    first = jwt.encode(claims_of(provider), own, "RS256", headers={"kid": "made-up-0"})
    assert "does not publish (kid 'made-up-0')" in await refused(atrium, first)
    fetched = fetcher.key_fetches
    for n in range(1, 20):
        token = jwt.encode(claims_of(provider), own, "RS256", headers={"kid": f"made-up-{n}"})
        assert "does not publish" in await refused(atrium, token)
    assert fetcher.key_fetches == fetched  # within the refresh interval: no fetch at all


async def test_a_signature_that_does_not_verify_is_refused(
    atrium: Client, provider: Provider
) -> None:
    token = await provider.machine_token()
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["atrium_group"] = "checkout-team"  # another team's rights
    forged = f"{header}.{_b64(json.dumps(claims).encode())}.{signature}"
    assert "signature does not verify" in await refused(atrium, forged)
    # Signed by another key under the provider's key id: no better.
    own = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    kid = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["kid"]
    impostor = jwt.encode(claims_of(provider), own, "RS256", headers={"kid": kid})
    assert "signature does not verify" in await refused(atrium, impostor)


async def test_an_algorithm_other_than_the_keys_is_refused(
    atrium: Client, provider: Provider
) -> None:
    token = await provider.sign(claims_of(provider), {"alg": "RS256"})
    header, payload, signature = token.split(".")
    ps = _b64(
        json.dumps(
            {"alg": "PS256", "kid": json.loads(base64.urlsafe_b64decode(header + "==="))["kid"]}
        ).encode()
    )
    message = await refused(atrium, f"{ps}.{payload}.{signature}")
    assert "not the one its key" in message


async def test_key_rotation_is_followed_without_a_restart(
    atrium: Client, provider: Provider
) -> None:
    fetcher = atrium.services.identity.provider
    before = await provider.machine_token()
    assert (await atrium.gql(VIEWER, token=before))["data"]["viewer"]["ref"]
    fetched = fetcher.key_fetches
    new_kid = await provider.rotate()
    after = await provider.machine_token()
    assert jwt.get_unverified_header(after)["kid"] == new_kid
    fetcher.refresh_interval = 0.0  # the interval has passed since the last fetch
    assert (await atrium.gql(VIEWER, token=after))["data"]["viewer"]["ref"]
    assert fetcher.key_fetches == fetched + 1
    # Tokens signed before the rotation hold until they expire (the old key is still published).
    assert (await atrium.gql(VIEWER, token=before))["data"]["viewer"]["ref"]


async def test_without_an_audience_only_atr_tokens_are_bearer_tokens(
    make_client: AppFactory, provider: Provider
) -> None:
    settings = provider.settings(PUBLIC) | {"oidc_audience": None}
    client: Client = await make_client(**settings)
    token = await provider.machine_token()
    response = await client.post(
        "/graphql", json={"query": VIEWER}, headers={"authorization": f"Bearer {token}"}
    )
    assert response.status_code == 401
    assert "malformed, unknown or revoked" in response.json()["errors"][0]["message"]
