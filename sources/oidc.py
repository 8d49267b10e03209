"""The OpenID provider as Atrium talks to it: its discovery document, its signing keys (JWKS),
the authorization code exchange, userinfo, and the verification of the JWTs it signs.

Discovery and keys are fetched on first need and kept for an hour. A token naming a key the
kept set lacks (the provider rotated its keys) fetches the set again at once, but no more than
once per ``refresh_interval``: a stream of tokens with made-up key ids costs the provider one
request per interval, not one each.

Only asymmetric signatures verify, with the algorithm the key itself declares (or, for a key
that declares none, one of its type's): ``none``, and HS256 "signed" with a public key, never do.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

import httpx
import jwt

__all__ = [
    "ASYMMETRIC",
    "GrantRefused",
    "Metadata",
    "OpenIDProvider",
    "ProviderUnavailable",
    "TokenRejected",
]

log = logging.getLogger("atrium.oidc")

# Algorithms by key type (JWK ``kty``; an EC key's curve decides its one algorithm).
_BY_KTY: Final = {
    "RSA": frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}),
    "EC": frozenset({"ES256", "ES384", "ES512"}),
    "OKP": frozenset({"EdDSA", "Ed25519"}),
}
_EC_CURVES: Final = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
ASYMMETRIC: Final = frozenset().union(*_BY_KTY.values())
LEEWAY: Final = 30.0  # seconds of clock difference allowed on exp, nbf and iat


class ProviderUnavailable(Exception):
    """The provider could not be reached, or answered what no provider should."""


class GrantRefused(Exception):
    """The provider refused an authorization code (replayed, expired, wrong verifier...)."""


class TokenRejected(Exception):
    """A JWT that does not verify; the message says why, for the person or tool holding it."""


@dataclass(frozen=True, slots=True)
class Metadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None
    end_session_endpoint: str | None


class OpenIDProvider:
    """One issuer, seen by one client (``client_id``, authenticated by ``client_secret_basic``)."""

    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str,
        http: httpx.AsyncClient,
        *,
        ttl: float = 3600.0,
        refresh_interval: float = 30.0,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        self.client_id = client_id
        self._secret = client_secret
        self.http = http
        self.ttl = ttl
        # Fewest seconds between two fetches of the keys on an unknown key id.
        self.refresh_interval = refresh_interval
        self.key_fetches = 0  # how often the keys were fetched (tests and metrics read it)
        self._metadata: tuple[float, Metadata] | None = None
        self._keys: dict[str, dict[str, Any]] = {}
        self._keys_at = -1e9  # monotonic time of the last fetch of the keys
        self._metadata_lock = asyncio.Lock()
        self._keys_lock = asyncio.Lock()

    async def metadata(self) -> Metadata:
        kept = self._metadata
        if kept is not None and time.monotonic() - kept[0] < self.ttl:
            return kept[1]
        async with self._metadata_lock:
            kept = self._metadata
            if kept is not None and time.monotonic() - kept[0] < self.ttl:
                return kept[1]
            try:
                found = _metadata(
                    await self._get_json(f"{self.issuer}/.well-known/openid-configuration")
                )
            except ProviderUnavailable:
                if kept is None:
                    raise
                log.warning("the provider's discovery document could not be read; kept the last")
                found = kept[1]
            if found.issuer.rstrip("/") != self.issuer:
                raise ProviderUnavailable(
                    f"the discovery document names issuer {found.issuer}, not {self.issuer}"
                )
            self._metadata = (time.monotonic(), found)
            return found

    async def exchange(self, code: str, verifier: str, redirect_uri: str) -> dict[str, Any]:
        """The token response for an authorization code (authorization code grant with PKCE)."""
        meta = await self.metadata()
        # client_secret_basic: each part form-encoded before Basic's base64 (RFC 6749 2.3.1).
        auth = (quote(self.client_id, safe=""), quote(self._secret, safe=""))
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
        }
        try:
            response = await self.http.post(meta.token_endpoint, data=form, auth=auth)
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(f"the provider's token endpoint: {exc}") from exc
        body = _json(response)
        if response.status_code == 400 or response.status_code == 401:
            error = str(body.get("error") or "refused")
            description = str(body.get("error_description") or "")
            raise GrantRefused(f"{error}: {description}" if description else error)
        if response.status_code != 200 or not isinstance(body.get("id_token"), str):
            raise ProviderUnavailable(
                f"the provider's token endpoint answered {response.status_code} without an ID token"
            )
        return body

    async def userinfo(self, access_token: str) -> dict[str, Any]:
        """The claims userinfo gives for an access token ({} when the provider has no userinfo)."""
        meta = await self.metadata()
        if meta.userinfo_endpoint is None:
            return {}
        try:
            response = await self.http.get(
                meta.userinfo_endpoint, headers={"authorization": f"Bearer {access_token}"}
            )
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(f"the provider's userinfo endpoint: {exc}") from exc
        body = _json(response)
        if response.status_code != 200:
            raise ProviderUnavailable(
                f"the provider's userinfo endpoint answered {response.status_code}"
            )
        return body

    async def verify(
        self, token: str, *, audience: str, nonce: str | None = None, id_token: bool = False
    ) -> dict[str, Any]:
        """The claims of a JWT the issuer signed for ``audience``; TokenRejected otherwise.
        An ID token also needs ``iat`` and, when given, the ``nonce`` of its sign-in."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRejected("it is not a JWT") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in ASYMMETRIC:
            raise TokenRejected(
                f"its algorithm {alg!r} is not accepted: only asymmetric signatures are"
            )
        kid = header.get("kid")
        jwk = await self.key(kid if isinstance(kid, str) else None)
        if jwk is None:
            raise TokenRejected(f"it names a key the issuer does not publish (kid {kid!r})")
        if not _compatible(jwk, alg):
            raise TokenRejected(f"its algorithm {alg} is not the one its key (kid {kid!r}) is for")
        try:
            key = jwt.PyJWK(jwk, algorithm=alg)
        except jwt.PyJWTError as exc:
            raise TokenRejected(f"its key (kid {kid!r}) cannot verify it: {exc}") from None
        required = ["iss", "aud", "exp", *(["iat", "sub"] if id_token else [])]
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=audience,
                issuer=self.issuer,
                leeway=LEEWAY,
                options={"require": required},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRejected("it has expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRejected("it is not valid yet (nbf or iat in the future)") from None
        except jwt.InvalidAudienceError:
            raise TokenRejected(f"its audience is not {audience}") from None
        except jwt.InvalidIssuerError:
            raise TokenRejected(f"its issuer is not {self.issuer}") from None
        except jwt.MissingRequiredClaimError as exc:
            raise TokenRejected(f"it lacks the {exc.claim} claim") from None
        except jwt.InvalidSignatureError:
            raise TokenRejected("its signature does not verify") from None
        except jwt.PyJWTError as exc:
            raise TokenRejected(f"it is malformed: {exc}") from None
        if id_token:
            _check_id_token(claims, self.client_id, nonce)
        return claims

    async def key(self, kid: str | None) -> dict[str, Any] | None:
        """The published signing key (a JWK) with this id; a token without a key id is
        verified only when the issuer publishes one signing key."""
        now = time.monotonic()
        stale = now - self._keys_at >= self.ttl
        if stale or (kid not in self._keys and now - self._keys_at >= self.refresh_interval):
            async with self._keys_lock:
                if self._keys_at < now:  # nobody fetched them while this one waited
                    await self._fetch_keys()
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _fetch_keys(self) -> None:
        meta = await self.metadata()
        self._keys_at = time.monotonic()
        self.key_fetches += 1
        try:
            body = await self._get_json(meta.jwks_uri)
        except ProviderUnavailable:
            if not self._keys:
                raise
            log.warning("the provider's keys could not be read; kept the last")
            return
        keys: dict[str, dict[str, Any]] = {}
        for index, jwk in enumerate(body.get("keys") or []):
            if (
                isinstance(jwk, dict)
                and jwk.get("use", "sig") == "sig"
                and jwk.get("kty") in _BY_KTY
            ):
                keys[str(jwk.get("kid", f"#{index}"))] = jwk
        self._keys = keys

    async def _get_json(self, url: str) -> dict[str, Any]:
        try:
            response = await self.http.get(url)
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(f"{url}: {exc}") from exc
        if response.status_code != 200:
            raise ProviderUnavailable(f"{url} answered {response.status_code}")
        return _json(response)


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise ProviderUnavailable(f"{response.url} answered something that is not a JSON object")
    return body


def _metadata(body: dict[str, Any]) -> Metadata:
    try:
        return Metadata(
            issuer=str(body["issuer"]),
            authorization_endpoint=str(body["authorization_endpoint"]),
            token_endpoint=str(body["token_endpoint"]),
            jwks_uri=str(body["jwks_uri"]),
            userinfo_endpoint=body.get("userinfo_endpoint"),
            end_session_endpoint=body.get("end_session_endpoint"),
        )
    except KeyError as exc:
        raise ProviderUnavailable(f"the discovery document lacks {exc.args[0]}") from None


def _compatible(jwk: dict[str, Any], alg: str) -> bool:
    """Whether a token signed with ``alg`` may be verified with this key: the key's declared
    algorithm if it has one, else one its type (and an EC key's curve) is for."""
    declared = jwk.get("alg")
    if declared is not None:
        return bool(declared == alg)
    if alg not in _BY_KTY.get(str(jwk.get("kty")), ()):
        return False
    return alg not in _EC_CURVES or jwk.get("crv") == _EC_CURVES[alg]


def _check_id_token(claims: dict[str, Any], client_id: str, nonce: str | None) -> None:
    """OpenID Connect Core 3.1.3.7: several audiences need ``azp`` naming this client; the
    nonce must be the sign-in's own."""
    audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    if len(audiences) > 1 and claims.get("azp") != client_id:
        raise TokenRejected("it names several audiences but was not issued to Atrium (azp)")
    if nonce is not None and claims.get("nonce") != nonce:
        raise TokenRejected("its nonce is not the one of this sign-in")
