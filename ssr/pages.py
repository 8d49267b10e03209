"""The console's pages: the critical ones rendered here from the client's own persisted
operations, run in-process; the others a shell the client renders.

A page runs its operations as a GET of them would (``graph.view.run_in_process``): the same
trusted documents, response cache and cache policies. It embeds their results for the client's
Apollo cache, so the browser asks nothing more at load. When its main operation fails, the page
is the plain shell and the client fetches for itself. Its ETag is made of its answers' ETags,
so it changes whenever what it shows does; a cacheable page is kept whole (``PageCache``).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from dataclasses import dataclass
from typing import Any

import orjson
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from graph.authz import viewer_of
from graph.http_input import HTTPError
from graph.services import Services
from graph.view import run_in_process
from loaders.responses import etag_of
from sources.auth import Viewer
from sources.errors import NotAuthenticated
from ssr.console import Console, embed_json, panel_template

__all__ = ["catalog_page", "entity_page", "home_page", "team_redirect", "workload_page"]

log = logging.getLogger("atrium.console")

_ROUTES = {
    "home": "src/routes/Home.tsx",
    "catalog": "src/routes/Catalog.tsx",
    "entity": "src/routes/Entity.tsx",
    "team": "src/routes/Team.tsx",
    "workload": "src/routes/Workload.tsx",
}
# Scripts only from the build (/assets/, same origin); the embedded results are data
# (type application/json), which browsers never run. No inline script, style or handler.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: https:; "
    "connect-src 'self'; font-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


@dataclass(slots=True)
class _Answer:
    name: str
    variables: dict[str, Any]
    data: dict[str, Any] | None
    etag: str | None
    policy: tuple[int, bool] | None


async def home_page(request: Request) -> Response:
    return await _render(request, "home", "home.html", "Home", [("HomePage", {})])


async def catalog_page(request: Request) -> Response:
    return await _render(request, "catalog", "shell.html", "Catalog", [])


async def workload_page(request: Request) -> Response:
    name = request.path_params["name"]
    return await _render(request, "workload", "shell.html", name, [])


async def team_redirect(request: Request) -> Response:
    name = request.path_params["name"]
    return RedirectResponse(f"/catalog/default/group/{name}", status_code=308)


async def entity_page(request: Request) -> Response:
    params = request.path_params
    namespace, kind, name = (params[k].lower() for k in ("namespace", "kind", "name"))
    ref = f"{kind}:{namespace}/{name}"
    if kind == "group":
        operations = [("TeamPage", {"ref": ref}), ("TeamWorkloads", {"ref": ref})]
        return await _render(request, "team", "team.html", name, operations, ref=ref, kind=kind)
    operations = [("EntityPage", {"ref": ref})]
    if kind == "component":
        operations.append(("EntityWorkloads", {"ref": ref}))
    return await _render(request, "entity", "entity.html", name, operations, ref=ref, kind=kind)


async def _render(
    request: Request,
    route: str,
    template: str,
    title: str,
    operations: list[tuple[str, dict[str, Any]]],
    *,
    ref: str | None = None,
    kind: str | None = None,
) -> Response:
    """A page, counted and logged as the API's requests are (operation ``page:<route>``)."""
    started = time.perf_counter()
    response = await _page(request, route, template, title, operations, ref, kind)
    services: Services = request.app.state.services
    services.record_request(
        "GET", f"page:{route}", response.status_code, time.perf_counter() - started
    )
    return response


async def _page(
    request: Request,
    route: str,
    template: str,
    title: str,
    operations: list[tuple[str, dict[str, Any]]],
    ref: str | None,
    kind: str | None = None,
) -> Response:
    services: Services = request.app.state.services
    console: Console | None = services.console
    if console is None:
        return PlainTextResponse(
            "The console is not built: run `make web` (the API is at /graphql).", 503
        )
    # Plugins' panels on this page: their operations run with the page's, their HTML follows.
    panels = console.panels_of(route, kind) if ref is not None else []
    if not services.settings.ssr:
        template, operations, panels = "shell.html", [], []
    client = request.client.host if request.client else None
    try:
        viewer = await viewer_of(
            dict(request.scope["headers"]),
            client,
            services.settings,
            services.database,
            services.tokens,
        )
    except NotAuthenticated as exc:
        return PlainTextResponse(str(exc), 401, {"WWW-Authenticate": "Bearer"})

    answers = [await _run(request, services, console, viewer, *op) for op in operations]
    answers += await _panel_answers(request, services, console, viewer, panels, ref)
    page = await _page_data(services, console, viewer)
    main = answers[0] if answers else None
    if main is not None and main.data is None:
        template, answers = "shell.html", []  # the client fetches for itself
    kept = [a for a in answers if a.data is not None]
    found = main is None or main.data is None or _found(main.data)

    headers = {
        "content-security-policy": CONTENT_SECURITY_POLICY,
        "x-content-type-options": "nosniff",
        "referrer-policy": "same-origin",
        "vary": services.vary[1].decode("latin-1"),
    }
    etag = None
    if found and len(kept) == len(answers):
        etag = _page_etag(console, route, template, answers, page, viewer)
        headers["etag"] = etag
        headers["cache-control"] = _cache_control(answers, viewer)
        if _matches(request.headers.get("if-none-match"), etag):
            return Response(status_code=304, headers=headers)
        body = console.pages.get(etag)
        if body is not None:
            return Response(body, 200, headers, media_type="text/html")
    else:
        headers["cache-control"] = "no-store"

    html = console.templates.get_template(template).render(
        title=title,
        ref=ref,
        viewer=viewer,
        assets=console.vite.assets(_ROUTES[route]),
        data={a.name: a.data for a in kept},
        results=Markup(
            embed_json(
                [{"operationName": a.name, "variables": a.variables, "data": a.data} for a in kept]
            )
        ),
        page=Markup(embed_json(page)),
        panels=[
            {"template": panel_template(p), "operation": p.operation}
            for p in panels
            if p.template is not None
        ],
    )
    body = html.encode()
    if etag is not None:
        console.pages.put(etag, body)
    return Response(body, 200 if found else 404, headers, media_type="text/html")


async def _run(
    request: Request,
    services: Services,
    console: Console,
    viewer: Viewer,
    name: str,
    variables: dict[str, Any],
) -> _Answer:
    digest = console.operations.get(name)
    if digest is None:
        log.error("the console's build has no operation %s: rebuild it (make web)", name)
        return _Answer(name, variables, None, None, None)
    try:
        outcome = await run_in_process(services, request.scope, viewer, digest, name, variables)
    except HTTPError as exc:
        log.warning("%s failed for a page: %s", name, exc)
        return _Answer(name, variables, None, None, None)
    body = orjson.loads(outcome.body)
    if outcome.status != 200 or body.get("errors") or body.get("data") is None:
        log.warning("%s failed for a page: %s", name, body.get("errors"))
        return _Answer(name, variables, None, None, None)
    # Answers that may not be kept carry no ETag of their own; the page's needs one all the same.
    etag = outcome.etag.decode("latin-1") if outcome.etag else etag_of(outcome.body)
    return _Answer(name, variables, body["data"], etag, outcome.policy)


async def _panel_answers(
    request: Request,
    services: Services,
    console: Console,
    viewer: Viewer,
    panels: list[Any],
    ref: str | None,
) -> list[_Answer]:
    """The panels' operations, at the same time, within ``ssr_panel_budget`` seconds: a panel
    whose backend is slow is left to the client (the page is not kept then), and what it was
    fetching goes on, to be cached for the next page."""
    if not panels:
        return []
    tasks = [
        asyncio.create_task(_run(request, services, console, viewer, p.operation, {"ref": ref}))
        for p in panels
    ]
    await asyncio.wait(tasks, timeout=services.settings.ssr_panel_budget)
    answers = []
    for panel, task in zip(panels, tasks, strict=True):
        if task.done():
            answers.append(task.result())
        else:
            log.info("%s took longer than the page could wait: left to the client", panel.operation)
            _LATE.add(task)
            task.add_done_callback(_LATE.discard)
            answers.append(_Answer(panel.operation, {"ref": ref}, None, None, None))
    return answers


_LATE: set[asyncio.Task[_Answer]] = set()  # panels' operations finishing after their page


def _found(data: dict[str, Any]) -> bool:
    return "entity" not in data or data["entity"] is not None


async def _page_data(services: Services, console: Console, viewer: Viewer) -> dict[str, Any]:
    settings = services.settings
    page: dict[str, Any] = {
        "mode": settings.mode.value,
        "viewer": {"ref": viewer.ref, "via": viewer.via},
        "panels": sorted({p.operation for p in console.panels}),
    }
    if not settings.production:
        page["demoUsers"] = await _demo_users(services, console)
    return page


_DEMO_USERS = """{ entities(filter: {kind: ["user"]}, orderBy: NAME_ASC, first: 100) {
  nodes { ref name ... on User { profile { displayName } } } } }"""


async def _demo_users(services: Services, console: Console) -> list[dict[str, Any]]:
    """The users a person may act as in development (the catalog's first hundred), a minute
    old at most."""
    stamp, users = console.demo_users
    if time.monotonic() - stamp > 60:
        context = await services.context(None, Viewer.anonymous(True))
        result = await services.execute(_DEMO_USERS, context=context)
        nodes = (
            (result.data or {}).get("entities", {}).get("nodes", []) if not result.errors else []
        )
        users = [
            {
                "ref": n["ref"],
                "name": n["name"],
                "displayName": (n.get("profile") or {}).get("displayName") or n["name"],
            }
            for n in nodes
        ]
        if result.errors:
            log.warning("demo users could not be listed: %s", result.errors)
        console.demo_users = (time.monotonic(), users)
    return users


def _cache_control(answers: list[_Answer], viewer: Viewer) -> str:
    """As long as every answer may be kept, shared only when all may be and nobody is signed
    in (the page names its viewer). A page holding an answer that may not be kept (cluster
    state) is revalidated on every use: its ETag changes with that answer."""
    policies = [a.policy for a in answers]
    private = viewer.ref is not None or any(p is not None and p[1] for p in policies)
    scope = "private" if private else "public"
    if any(p is None for p in policies):
        return f"{scope}, no-cache"
    max_age = min((p[0] for p in policies if p is not None), default=0)
    return f"max-age={max_age}, {scope}"


def _page_etag(
    console: Console,
    route: str,
    template: str,
    answers: list[_Answer],
    page: dict[str, Any],
    viewer: Viewer,
) -> str:
    """Made of what the page shows: the build, its answers and, as the page names its viewer,
    who that is."""
    parts = [console.version, route, template, orjson.dumps(page).decode()]
    parts += [a.etag or "" for a in answers]
    parts += [viewer.via, viewer.ref or "", viewer.token_name or ""]
    digest = hashlib.blake2b("\n".join(parts).encode(), digest_size=16).hexdigest()
    return f'"p{digest}"'


def _matches(if_none_match: str | None, etag: str) -> bool:
    if not if_none_match:
        return False
    return any(
        candidate.strip() in ("*", etag) or candidate.strip().removeprefix("W/") == etag
        for candidate in if_none_match.split(",")
    )
