"""Who a page is for, as the page says it (``<script id="atrium-page">``): the mode, the viewer
by name and picture (and whether the directory knows them), whether people sign in with the
identity provider, the panels the server offers and, in development, the demo users one may
act as."""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import urlencode

from graph.authz import may_keep_own
from graph.services import Services
from graph.settings import Settings
from sources.auth import Viewer
from ssr.console import Console
from ssr.present import display_name, picture

__all__ = ["page_data", "sign_in_href", "sign_in_offered"]

log = logging.getLogger("atrium.console")

FRESH = 60.0  # seconds a listing of people is reused

_DEMO_USERS = """{ entities(filter: {kind: ["user"]}, orderBy: NAME_ASC, first: 100) {
  nodes { ref name title ... on User { profile { displayName picture } } } } }"""
_PERSON = """query Person($ref: String!) { entity(ref: $ref) {
  ref name title ... on User { profile { displayName picture } }
  ... on Group { profile { displayName picture } } } }"""


def sign_in_offered(settings: Settings) -> bool:
    """Whether people sign in with the identity provider (the header's "Sign in")."""
    return bool(settings.oidc_issuer and settings.oidc_client_id)


def sign_in_href(path: str, query: str) -> str:
    """The header's "Sign in": back to this page afterwards (as Header.tsx writes it)."""
    return "/auth/login?" + urlencode({"next": f"{path}?{query}" if query else path})


async def page_data(services: Services, console: Console, viewer: Viewer) -> dict[str, Any]:
    settings = services.settings
    data: dict[str, Any] = {
        "mode": settings.mode.value,
        "viewer": {
            "ref": viewer.ref,
            "via": viewer.via,
            "name": None,
            "picture": None,
            "known": viewer.known,
            # Whether the entity page offers the star: who may star (graph.authz).
            "mayStar": may_keep_own(viewer),
        },
        "panels": sorted({p.operation for p in console.panels}),
        # Whether people sign in with the identity provider (the header offers it).
        "signIn": sign_in_offered(settings),
    }
    if viewer.ref is not None:
        # The directory's name and picture; the provider's for someone it does not know.
        person = await _person(services, console, viewer.ref)
        data["viewer"] |= {
            "name": display_name(person)
            if person
            else viewer.name or viewer.ref.rpartition("/")[2],
            "picture": (picture(person) if person else None) or viewer.picture,
        }
    if not settings.production:
        data["demoUsers"] = await _demo_users(services, console)
    return data


async def _person(services: Services, console: Console, ref: str) -> dict[str, Any] | None:
    """The viewer's catalog entry, a minute old at most."""
    stamp, found = console.people.get(ref, (-1e9, None))
    if time.monotonic() - stamp > FRESH:
        context = await services.context(None, Viewer.anonymous(True))
        result = await services.execute(_PERSON, {"ref": ref}, context=context)
        found = (result.data or {}).get("entity") if not result.errors else None
        if len(console.people) > 10_000:
            console.people.clear()
        console.people[ref] = (time.monotonic(), found)
    return found


async def _demo_users(services: Services, console: Console) -> list[dict[str, Any]]:
    """The users a person may act as in development (the catalog's first hundred), a minute
    old at most."""
    stamp, users = console.demo_users
    if time.monotonic() - stamp > FRESH:
        context = await services.context(None, Viewer.anonymous(True))
        result = await services.execute(_DEMO_USERS, context=context)
        nodes = (
            (result.data or {}).get("entities", {}).get("nodes", []) if not result.errors else []
        )
        users = [
            {"ref": n["ref"], "name": n["name"], "displayName": display_name(n)} for n in nodes
        ]
        if result.errors:
            log.warning("demo users could not be listed: %s", result.errors)
        console.demo_users = (time.monotonic(), users)
    return users
