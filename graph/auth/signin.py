"""Sign-in with the OpenID provider: ``GET /auth/login``, ``GET /auth/callback`` and
``POST /auth/logout``, and the ``Identity`` the lifespan connects for them and for bearer JWTs.

A sign-in is the authorization code flow with PKCE (S256), a state and a nonce. The state names
the sign-in kept server-side (``sources.sessions``: its nonce, PKCE verifier and where to go
after), usable once and for ten minutes, and tied to the browser that started it by a cookie of
its own, so a callback carried to another browser (login CSRF) is refused. The code is
exchanged with ``client_secret_basic``; the ID token is verified (``sources.oidc``) and its
person becomes a session, kept server-side behind an HttpOnly, SameSite=Lax cookie (Secure and
``__Host-`` outside development).

Whatever goes wrong is a page that says what and offers to start again, never a 500. The
provider's client and the session store are connected by ``graph.auth.identity.connect_identity``.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import logging
import re
import secrets
import time
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from graph.auth.identity import Identity
from graph.auth.sessions import read_cookie
from graph.services import Services
from graph.settings import Settings
from sources.audit import record_audit
from sources.oidc import GrantRefused, ProviderUnavailable, TokenRejected
from sources.people import person_named
from sources.sessions import PendingSignIn, Session, secret_key

__all__ = ["safe_next", "sign_in_routes"]

log = logging.getLogger("atrium.signin")

SIGN_IN_TTL: Final = 600.0  # seconds a person has to get through the provider's pages
# A path of Atrium's own: one slash, then no slash or backslash; no control characters or
# spaces anywhere (browsers drop tabs and newlines from URLs, making "/\t/evil" "//evil").
_OWN_PATH: Final = re.compile(r"/(?![/\\])[^\x00-\x20\x7f\\]*")


def safe_next(value: str | None) -> str | None:
    """Where to go after signing in, if it is one of Atrium's own paths; None otherwise
    (``//evil.example``, ``/\\evil.example``, ``https://...``, ``javascript:``...)."""
    if value is None or value == "":
        return "/"
    if _OWN_PATH.fullmatch(value) is None:
        return None
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        return None
    return value


def sign_in_routes(settings: Settings) -> list[Route]:
    if not (settings.oidc_issuer and settings.oidc_client_id):
        return []
    return [
        Route("/auth/login", login, methods=["GET"]),
        Route("/auth/callback", callback, methods=["GET"]),
        Route("/auth/logout", logout, methods=["POST"]),
    ]


async def login(request: Request) -> Response:
    services: Services = request.app.state.services
    identity = services.identity
    settings = services.settings
    if identity is None:
        return _page(503, "Sign-in is not ready", "Atrium is still starting: try again.")
    target = safe_next(request.query_params.get("next"))
    if target is None:
        return _page(
            400,
            "Not a page of Atrium",
            "After signing in you can only be sent to one of Atrium's own pages; this link "
            "names somewhere else.",
            again=_login("/"),
        )
    try:
        meta = await identity.provider.metadata()
    except ProviderUnavailable as exc:
        log.warning("the identity provider is unreachable", extra={"error": str(exc)})
        return _page(502, "The identity provider is unreachable", str(exc), again=_login(target))
    browser = request.cookies.get(identity.sign_in_cookie) or secrets.token_urlsafe(32)
    state, nonce, verifier = (secrets.token_urlsafe(32) for _ in range(3))
    pending = PendingSignIn(secret_key(browser), nonce, verifier, target)
    await identity.store.begin(secret_key(state), pending, SIGN_IN_TTL)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    query = urlencode(
        {
            "response_type": "code",
            "client_id": settings.oidc_client_id,
            "redirect_uri": _redirect_uri(settings),
            "scope": settings.oidc_scopes,
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge.rstrip(b"=").decode(),
            "code_challenge_method": "S256",
        }
    )
    separator = "&" if "?" in meta.authorization_endpoint else "?"
    response = RedirectResponse(f"{meta.authorization_endpoint}{separator}{query}", 303)
    response.headers["cache-control"] = "no-store"
    response.set_cookie(
        identity.sign_in_cookie,
        browser,
        max_age=int(SIGN_IN_TTL),
        path="/",
        secure=identity.secure,
        httponly=True,
        samesite="lax",
    )
    return response


async def callback(request: Request) -> Response:
    services: Services = request.app.state.services
    identity = services.identity
    settings = services.settings
    if identity is None:
        return _page(503, "Sign-in is not ready", "Atrium is still starting: try again.")
    params = request.query_params
    state = params.get("state")
    pending = await identity.store.take(secret_key(state)) if state else None
    again = _login(pending.next if pending is not None else "/")
    if pending is None:
        return _page(
            400,
            "This sign-in has ended",
            "It is unknown, was already used, or took longer than ten minutes.",
            again=again,
        )
    browser = request.cookies.get(identity.sign_in_cookie)
    if browser is None or secret_key(browser) != pending.browser:
        return _page(
            400,
            "This sign-in was started elsewhere",
            "It began in another browser: sign in from here instead.",
            again=again,
        )
    if params.get("error"):
        reason = params.get("error_description") or params["error"]
        return _page(400, "The identity provider did not sign you in", reason, again=again)
    issuer = params.get("iss")
    if issuer is not None and issuer.rstrip("/") != identity.provider.issuer:
        return _page(400, "Another provider answered", f"{issuer} is not Atrium's.", again=again)
    code = params.get("code")
    if not code:
        return _page(400, "The identity provider sent no code", "Start again.", again=again)
    try:
        tokens = await identity.provider.exchange(code, pending.verifier, _redirect_uri(settings))
        claims = await identity.provider.verify(
            tokens["id_token"],
            audience=identity.provider.client_id,
            nonce=pending.nonce,
            id_token=True,
        )
        claims = await _with_userinfo(identity, settings, claims, tokens)
    except GrantRefused as exc:
        return _page(400, "The identity provider refused this sign-in", str(exc), again=again)
    except TokenRejected as exc:
        return _page(
            400,
            "The identity provider's answer does not verify",
            f"Its ID token was refused: {exc}.",
            again=again,
        )
    except ProviderUnavailable as exc:
        log.warning("sign-in failed at the provider", extra={"error": str(exc)})
        return _page(502, "The identity provider is unreachable", str(exc), again=again)
    return await _start_session(request, services, identity, claims, tokens, pending.next)


async def _with_userinfo(
    identity: Identity, settings: Settings, claims: dict[str, Any], tokens: dict[str, Any]
) -> dict[str, Any]:
    """The ID token's claims, with userinfo's when the ID token lacks the person's name (many
    providers put profile claims in userinfo only)."""
    wanted = (settings.oidc_user_claim, "name", "picture")
    access = tokens.get("access_token")
    if all(claims.get(c) for c in wanted) or not isinstance(access, str):
        return claims
    info = await identity.provider.userinfo(access)
    if info.get("sub") != claims["sub"]:
        return claims  # userinfo about someone else: ignored, as OIDC Core 5.3.2 says
    return {**info, **claims}


async def _start_session(
    request: Request,
    services: Services,
    identity: Identity,
    claims: dict[str, Any],
    tokens: dict[str, Any],
    target: str,
) -> Response:
    settings = services.settings
    value = claims.get(settings.oidc_user_claim)
    person = (
        await person_named(services.database, value, by_email=settings.oidc_user_claim == "email")
        if isinstance(value, str)
        else None
    )
    if person is None:
        return _page(
            400,
            "The identity provider did not say who you are",
            f"Its answer has no usable {settings.oidc_user_claim} claim, which names you here.",
            again=_login(target),
        )
    name, picture = claims.get("name"), claims.get("picture")
    session = Session(
        ref=person.ref,
        scopes=("read", "write") if person.known else ("read",),
        known=person.known,
        name=name if isinstance(name, str) else None,
        picture=picture if isinstance(picture, str) else None,
        id_token=tokens.get("id_token"),
        expires=time.time() + settings.session_max_age,
    )
    old = read_cookie(request.headers.get("cookie", "").encode("latin-1"), identity.sessions.cookie)
    if old is not None:
        await _end(services, identity, old)
    session_id = secrets.token_urlsafe(32)
    await identity.store.create(secret_key(session_id), session, settings.session_idle_timeout)
    await record_audit(
        services.database,
        actor=person.ref,
        action="auth.signIn",
        target_ref=person.ref,
        outcome="allowed",
        arguments={"known": person.known},
    )
    log.info("signed in", extra={"user": person.ref, "known": person.known})
    response = RedirectResponse(target, 303)
    response.headers["cache-control"] = "no-store"
    response.set_cookie(
        identity.sessions.cookie.decode("latin-1"),
        session_id,
        max_age=int(settings.session_max_age),
        path="/",
        secure=identity.secure,
        httponly=True,
        samesite="lax",
    )
    return response


async def logout(request: Request) -> Response:
    """End the session here and, when the provider offers it, there too. A form POST from
    Atrium's own pages: another origin's is refused (with SameSite=Lax, a cross-site POST
    carries no session cookie anyway)."""
    services: Services = request.app.state.services
    identity = services.identity
    settings = services.settings
    if identity is None:
        return _page(503, "Sign-out is not ready", "Atrium is still starting: try again.")
    if not _same_origin(request, settings):
        return _page(403, "Not signed out", "Signing out is asked from Atrium's own pages only.")
    value = read_cookie(
        request.headers.get("cookie", "").encode("latin-1"), identity.sessions.cookie
    )
    session = await _end(services, identity, value) if value is not None else None
    target = "/"
    with contextlib.suppress(ProviderUnavailable):
        meta = await identity.provider.metadata()
        if meta.end_session_endpoint and session is not None and session.id_token:
            query = urlencode(
                {
                    "id_token_hint": session.id_token,
                    "post_logout_redirect_uri": settings.public_url,
                    "client_id": settings.oidc_client_id,
                }
            )
            separator = "&" if "?" in meta.end_session_endpoint else "?"
            target = f"{meta.end_session_endpoint}{separator}{query}"
    response = RedirectResponse(target, 303)
    response.headers["cache-control"] = "no-store"
    response.delete_cookie(
        identity.sessions.cookie.decode("latin-1"),
        path="/",
        secure=identity.secure,
        httponly=True,
        samesite="lax",
    )
    return response


async def _end(services: Services, identity: Identity, session_id: str) -> Session | None:
    """Delete a session, and tell every replica to forget it."""
    key = secret_key(session_id)
    session = await identity.store.delete(key)
    identity.sessions.forget(key)
    await services.invalidate([f"session:{key}"])
    if session is not None:
        log.info("signed out", extra={"user": session.ref})
    return session


def _same_origin(request: Request, settings: Settings) -> bool:
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return False
    public = urlsplit(settings.public_url or "")
    return origin.rstrip("/") == f"{public.scheme}://{public.netloc}"


def _redirect_uri(settings: Settings) -> str:
    return f"{(settings.public_url or '').rstrip('/')}/auth/callback"


def _login(target: str) -> str:
    return "/auth/login?" + urlencode({"next": target})


def _page(status: int, title: str, message: str, *, again: str | None = None) -> HTMLResponse:
    """A page saying what went wrong, with a way on."""
    link = (
        f'<p><a href="{html.escape(again)}">Sign in again</a> · <a href="/">Atrium\'s home</a></p>'
        if again is not None
        else '<p><a href="/">Atrium\'s home</a></p>'
    )
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} · Atrium</title></head>"
        '<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; '
        'padding: 0 1rem; line-height: 1.5">'
        f"<h1>{html.escape(title)}</h1><p>{html.escape(message)}</p>{link}</body></html>"
    )
    return HTMLResponse(
        body,
        status,
        headers={
            "cache-control": "no-store",
            "content-security-policy": "default-src 'none'; style-src-attr 'unsafe-inline'",
            "x-content-type-options": "nosniff",
        },
    )
