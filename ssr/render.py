"""How a console page is made, whatever the page: run its operations in-process (as a GET of
them would: trusted documents, the response cache, cache policies and ETags), render its
template from the answers, embed them for the client's Apollo cache, and send it compressed as
the browser accepts, with an ETag made of everything it renders.

A page whose main answer is missing (a server-side failure) is the frame with "Loading…": the
client fetches for itself. One whose main answer says the thing does not exist is a 404 page,
and one whose address the API refuses (a malformed cursor, a name no entity can have) a 400
page, both in the console's frame, with the answer embedded so the client renders the same.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import orjson
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from graph.auth.viewer import ANONYMOUS_READ_OFF, may_read
from graph.http_input import HTTPError
from graph.services import Services
from graph.view import run_in_process
from loaders.responses import etag_of
from sources.auth import Viewer
from sources.errors import NotAuthenticated
from ssr.compress import compress, negotiate
from ssr.console import Console, PageCache, embed_json, panel_template
from ssr.page_headers import cache_control, content_security_policy, matches, page_etag
from ssr.present import page_sections
from ssr.viewer import page_data, sign_in_href, sign_in_offered

__all__ = ["Answer", "Page", "render"]

log = logging.getLogger("atrium.console")

ROUTE_CHUNKS = {
    "home": "src/routes/Home.tsx",
    "catalog": "src/routes/Catalog.tsx",
    "entity": "src/routes/Entity.tsx",
    "team": "src/routes/Team.tsx",
    "workload": "src/routes/Workload.tsx",
    "missing": None,
}
SITE = "Atrium"


@dataclass(slots=True)
class Answer:
    name: str
    variables: dict[str, Any]
    data: dict[str, Any] | None
    etag: str | None
    policy: tuple[int, bool] | None
    # The client errors of a refused operation (BAD_USER_INPUT ...): the address is wrong.
    refused: list[str] = field(default_factory=list)
    # A backend the answer could not read (UNAVAILABLE: Prometheus down or not configured):
    # the answer stands, those fields null, and the page says why.
    unavailable: str | None = None


@dataclass
class Page:
    """What a page is: its route (which client chunk), template, operations (the first is the
    main one), and how its title, description and existence follow from the answers."""

    route: str
    template: str
    operations: list[tuple[str, dict[str, Any]]]
    meta: Callable[[dict[str, Any]], tuple[str, str]]
    found: Callable[[dict[str, Any]], bool] = lambda data: True
    ref: str | None = None
    kind: str | None = None
    panels: str | None = None  # which page's plugin panels it shows: "entity" or "team"
    context: dict[str, Any] = field(default_factory=dict)
    status: int = 200
    # Operations whose answers the page's own depend on (run first, embedded too), and how
    # the page's operations follow from them.
    prelude: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    then: Callable[[dict[str, Any]], list[tuple[str, dict[str, Any]]]] | None = None
    # Operations only a signed-in viewer's page runs (their stars): after the page's own.
    personal: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


async def render(request: Request, page: Page) -> Response:
    """A page, counted and logged as the API's requests are (operation ``page:<route>``)."""
    started = time.perf_counter()
    response = await _respond(request, page)
    services: Services = request.app.state.services
    label = f"page:{page.route}"
    services.metrics.know(label)  # the console's own routes
    services.record_request("GET", label, response.status_code, time.perf_counter() - started)
    return response


async def _respond(request: Request, page: Page) -> Response:
    services: Services = request.app.state.services
    console: Console | None = services.console
    if console is None:
        return PlainTextResponse(
            "The console is not built: run `make web` (the API is at /graphql).", 503
        )
    client = request.client.host if request.client else None
    try:
        viewer = await services.viewer_of(dict(request.scope["headers"]), client)
    except NotAuthenticated as exc:
        return PlainTextResponse(str(exc), 401, {"WWW-Authenticate": "Bearer"})
    if not may_read(viewer):
        return _sign_in_first(request, services, console)

    panels = console.panels_of(page.panels, page.kind) if page.panels else []
    # The workload page's panels are the client's alone: the server knows their sections.
    client_panels = [p for p in panels if p.page == "workload"]
    panels = [p for p in panels if p.page != "workload" and page.ref]
    sections = page_sections(
        page.route,
        page.kind,
        [p.section for p in panels if p.section],
        [p.section for p in client_panels if p.section],
    )
    operations = page.operations
    template, status = page.template, page.status
    if not services.settings.ssr:
        template, operations, panels = "shell.html", [], []
    before = [await _run(request, services, console, viewer, *op) for op in page.prelude]
    if page.then is not None and services.settings.ssr:
        operations = page.then({a.name: a.data for a in before if a.data is not None})
    if viewer.ref is not None and services.settings.ssr:
        operations = [*operations, *page.personal]
    answers = [await _run(request, services, console, viewer, *op) for op in operations]
    main = answers[0] if answers else None
    data = {a.name: a.data for a in answers if a.data is not None}
    if main is not None and main.refused:
        template, status, panels = "missing.html", 400, []
    elif main is not None and main.data is not None and not page.found(main.data):
        template, status, panels = "missing.html", 404, []
    elif main is not None and main.data is None:
        template, answers, panels = "shell.html", [], []  # the client fetches for itself
    else:
        answers += await _panel_answers(request, services, console, viewer, panels, page.ref)
        data = {a.name: a.data for a in answers if a.data is not None}
    if template != "shell.html":
        answers += [a for a in before if a.data is not None]
        data |= {a.name: a.data for a in before if a.data is not None}
    kept = [a for a in answers if a.data is not None]
    about = await page_data(services, console, viewer)
    about["unavailable"] = {a.name: a.unavailable for a in kept if a.unavailable}
    assets = console.vite.assets(
        ROUTE_CHUNKS.get(page.route if template != "missing.html" else "missing")
    )
    # What the client's entry fetches at once after the first paint, then runs in turn.
    about["chunks"] = list(assets.preloads)
    if console.plugins:
        # Plugins' console modules, each with the pages it has panels on: the client imports
        # those of the page before its first render, the others when a page needs them.
        about["plugins"] = console.plugin_modules()
    title, description = _meta(page, template, status, data, main)

    headers = {
        "content-security-policy": content_security_policy(console, services.settings.oidc_issuer),
        "x-content-type-options": "nosniff",
        "referrer-policy": "same-origin",
        "vary": services.vary[1].decode("latin-1") + ", Accept-Encoding",
    }
    accepted = request.headers.get("accept-encoding")
    etag = None
    if template != "shell.html" and len(kept) == len(answers):
        etags = [a.etag for a in answers]
        etag = page_etag(console, request, template, status, etags, about, viewer)
        headers["etag"] = etag
        headers["cache-control"] = cache_control([a.policy for a in answers], viewer)
        if matches(request.headers.get("if-none-match"), etag):
            return Response(status_code=304, headers=headers)
        forms = console.pages.get(etag)
        if forms is not None:
            return _send(console.pages, etag, forms, accepted, status, headers)
    else:
        headers["cache-control"] = "no-store"

    html = console.templates.get_template(template).render(
        meta={"title": title, "description": description},
        inline=console.inline,
        import_map=console.import_map,
        assets={"entry": assets.entry, "icon": "/assets/logo.svg"},
        route=page.route,
        viewer=viewer,
        viewer_info=about["viewer"]
        | {"demoUsers": about.get("demoUsers"), "signIn": about["signIn"]},
        ref=page.ref,
        status=status,
        # Percent-encoded again, as the browser's location.pathname (Starlette's is decoded).
        request_path=quote(request.url.path),
        sign_in_href=sign_in_href(request.url.path, request.url.query),
        sections=sections,
        starred=bool(((data.get("EntityViewer") or {}).get("entity") or {}).get("viewerStarred")),
        refused=main.refused if main is not None else [],
        data=data,
        results=Markup(
            embed_json(
                [{"operationName": a.name, "variables": a.variables, "data": a.data} for a in kept]
            )
        ),
        page=Markup(embed_json(about)),
        page_unavailable=about["unavailable"],
        panels=[
            {
                "template": panel_template(p),
                "operation": p.operation,
                "section": p.section,
                # A panel of a plugin's own module: React hydrates this HTML where it is.
                "hydrate": f"{p.plugin_id}:{p.operation}"
                if p.plugin_id in console.plugins
                else None,
            }
            for p in panels
            if p.template is not None
        ],
        **page.context,
    )
    forms = {"identity": html.encode()}
    if etag is not None:
        console.pages.put(etag, forms)
    return _send(console.pages, etag, forms, accepted, status, headers)


def _sign_in_first(request: Request, services: Services, console: Console) -> Response:
    """A page for nobody when anonymous reading is off: to the sign-in, which comes back here,
    when people sign in with the provider; else a 401 (the trusted proxy says who people are):
    a page saying how to get in for a browser, the reason in plain text for anything else.
    Nothing of the page asked for is rendered, and nothing is kept along the way."""
    settings = services.settings
    headers = {"cache-control": "no-store", "vary": services.vary[1].decode("latin-1")}
    if sign_in_offered(settings):
        href = sign_in_href(request.url.path, request.url.query)
        return RedirectResponse(href, 303, headers)
    headers["www-authenticate"] = "Bearer"
    if "text/html" not in request.headers.get("accept", ""):
        return PlainTextResponse(ANONYMOUS_READ_OFF, 401, headers)
    # A person's browser: a page saying how to get in.
    html = console.templates.get_template("closed.html").render(inline=console.inline)
    return HTMLResponse(html, 401, headers)


def _send(
    pages: PageCache,
    etag: str | None,
    forms: dict[str, bytes],
    accepted: str | None,
    status: int,
    headers: dict[str, str],
) -> Response:
    """The page in the encoding the browser accepts, compressed once and kept with it."""
    body = forms["identity"]
    encoding = negotiate(accepted, len(body))
    if encoding != "identity":
        if encoding not in forms:
            forms[encoding] = compress(body, encoding)
            if etag is not None:
                pages.grew(etag, len(forms[encoding]))
        body = forms[encoding]
        headers = headers | {"content-encoding": encoding}
    return Response(body, status, headers, media_type="text/html")


def _meta(
    page: Page,
    template: str,
    status: int,
    data: dict[str, Any],
    main: Answer | None,
) -> tuple[str, str]:
    if status == 404:
        title, description = "Not found", "No page of the console is at this address."
    elif status == 400:
        title, description = "Not a valid address", "This address is not one the console can show."
    elif template == "shell.html" and main is not None:
        title, description = page.meta({})
    else:
        title, description = page.meta(data)
    return f"{title} · {SITE}", description


async def _run(
    request: Request,
    services: Services,
    console: Console,
    viewer: Viewer,
    name: str,
    variables: dict[str, Any],
) -> Answer:
    digest = console.operations.get(name)
    if digest is None:
        log.error("the console's build has no operation %s: rebuild it (make web)", name)
        return Answer(name, variables, None, None, None)
    try:
        outcome = await run_in_process(services, request.scope, viewer, digest, name, variables)
    except HTTPError as exc:
        if exc.status == 400:
            return Answer(name, variables, None, None, None, [exc.message])
        log.warning("%s failed for a page: %s", name, exc)
        return Answer(name, variables, None, None, None)
    body = orjson.loads(outcome.body)
    errors = body.get("errors") or []
    refused = [
        e.get("message", "")
        for e in errors
        if (e.get("extensions") or {}).get("code")
        in ("BAD_USER_INPUT", "GRAPHQL_VALIDATION_FAILED")
    ]
    if refused:
        return Answer(name, variables, None, None, None, refused)
    unavailable = [e for e in errors if (e.get("extensions") or {}).get("code") == "UNAVAILABLE"]
    if errors and len(unavailable) == len(errors) and body.get("data") is not None:
        return Answer(
            name,
            variables,
            body["data"],
            etag_of(outcome.body),
            None,
            [],
            unavailable[0]["message"],
        )
    if outcome.status != 200 or errors or body.get("data") is None:
        log.warning("%s failed for a page: %s", name, errors)
        return Answer(name, variables, None, None, None)
    # Answers that may not be kept carry no ETag of their own; the page's needs one all the same.
    etag = outcome.etag.decode("latin-1") if outcome.etag else etag_of(outcome.body)
    return Answer(name, variables, body["data"], etag, outcome.policy)


async def _panel_answers(
    request: Request,
    services: Services,
    console: Console,
    viewer: Viewer,
    panels: list[Any],
    ref: str | None,
) -> list[Answer]:
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
            answers.append(Answer(panel.operation, {"ref": ref}, None, None, None))
    return answers


# Panels' operations finishing after their page.
_LATE: set[asyncio.Task[Answer]] = set()
