"""A console page's headers: its content security policy, how long it is kept, and its ETag
(made of everything it renders)."""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlsplit

import orjson
from starlette.requests import Request

from sources.auth import Viewer
from ssr.console import Console

__all__ = ["cache_control", "content_security_policy", "matches", "page_etag"]

# Scripts only from the build (/assets/, same origin) and the theme's inline one by its hash;
# styles from the build and the inline critical CSS by its hash; style attributes (Gestalt's
# components size some of their elements with them). The embedded results are data (type
# application/json), which browsers never run. No inline handler. Forms go to Atrium, and
# signing out (a form) on to the identity provider, which ends its session too.
_POLICY = (
    "default-src 'self'; script-src 'self' {script}; style-src 'self' {style}; "
    "style-src-attr 'unsafe-inline'; img-src 'self' data: https:; connect-src 'self'; "
    "font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'{forms}; "
    "frame-ancestors 'none'"
)


def content_security_policy(console: Console, issuer: str | None) -> str:
    """The page's policy: the inline theme script, and the plugins' import map when there is
    one, allowed by their hashes."""
    script = console.inline.script_hash
    if console.import_map is not None:
        script += f" {console.import_map.hash}"
    return _POLICY.format(
        script=script, style=console.inline.style_hash, forms=_provider_origin(issuer)
    )


def cache_control(policies: list[tuple[int, bool] | None], viewer: Viewer) -> str:
    """Kept by the browser and revalidated on every use: a page says what is true now (a star
    just given, a deploy just finished), and its ETag, made of its answers', makes the check
    a 304 when nothing it shows changed. Shared only when every answer may be and it was
    rendered for an anonymous reader (a page names its viewer; what a token may read, nobody
    else may, when anonymous reading is off)."""
    private = viewer.via != "anonymous" or any(p is not None and p[1] for p in policies)
    return f"{'private' if private else 'public'}, no-cache"


def page_etag(
    console: Console,
    request: Request,
    template: str,
    status: int,
    etags: list[str | None],
    about: dict[str, Any],
    viewer: Viewer,
) -> str:
    """Made of what the page renders: its address (the title and whatever the template reads
    from it), the build, its answers and, as the page names its viewer, who that is."""
    parts = [console.version, request.url.path, request.url.query, template, str(status)]
    parts.append(orjson.dumps(about).decode())
    parts += [etag or "" for etag in etags]
    parts += [viewer.via, viewer.ref or "", viewer.token_name or ""]
    digest = hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()
    return f'"p{digest}"'


def _provider_origin(issuer: str | None) -> str:
    if not issuer:
        return ""
    parts = urlsplit(issuer)
    return f" {parts.scheme}://{parts.netloc}"


def matches(if_none_match: str | None, etag: str) -> bool:
    if not if_none_match:
        return False
    return any(
        candidate.strip() in ("*", etag) or candidate.strip().removeprefix("W/") == etag
        for candidate in if_none_match.split(",")
    )
