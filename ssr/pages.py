"""The console's pages: which operations each runs, its template, and its title and description
(the client's routes say the same: web/src/routes/). How a page is made is ``ssr.render``."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

import ssr.catalog_url as catalog_url
from ssr.present import address_problem, display_name, kind_label
from ssr.render import Page, render

__all__ = [
    "catalog_page",
    "entity_page",
    "home_page",
    "missing_page",
    "team_redirect",
    "workload_page",
]

DESCRIPTION = (
    "Atrium: who owns what at your organisation, what runs where, and what needs attention."
)


def _entity_found(data: dict[str, Any]) -> bool:
    return data.get("entity") is not None


def _described(entity: dict[str, Any], fallback: str) -> str:
    text = str(entity.get("description") or "").strip() or fallback
    return text if len(text) <= 300 else text[:297].rstrip() + "…"


async def home_page(request: Request) -> Response:
    def meta(data: dict[str, Any]) -> tuple[str, str]:
        return "Home", DESCRIPTION

    return await render(request, Page("home", "home.html", [("HomePage", {})], meta))


async def catalog_page(request: Request) -> Response:
    state = catalog_url.parse(request.query_params)

    def operations(prelude: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        mine, starred = catalog_url.viewer_refs(prelude.get("CatalogViewer"))
        return [
            ("CatalogList", catalog_url.variables(state, mine, starred)),
            ("CatalogFacets", catalog_url.facet_variables(state, mine, starred)),
        ]

    def meta(data: dict[str, Any]) -> tuple[str, str]:
        title = f"“{state.search}” in the catalog" if state.search else "Catalog"
        return title, "Every service, API, resource, system and domain, with who owns it."

    return await render(
        request,
        Page(
            "catalog",
            "catalog.html",
            operations({}),
            meta,
            context={"state": state, "search": state.search},
            # "Mine" and "starred" are the viewer's: their teams and stars first.
            prelude=[("CatalogViewer", {})] if state.mine or state.starred else [],
            then=operations,
        ),
    )


async def workload_page(request: Request) -> Response:
    params = request.path_params
    key = {k: params[k] for k in ("cluster", "namespace", "name")}

    def meta(data: dict[str, Any]) -> tuple[str, str]:
        where = f"{key['cluster']}/{key['namespace']}"
        return (
            f"{key['name']} (workload)",
            f"The workload {key['name']} in {where}: its pods, events and logs.",
        )

    return await render(
        request,
        Page(
            "workload",
            "workload.html",
            [("WorkloadPage", key)],
            meta,
            found=lambda data: data.get("pinApp") is not None,
            panels="workload",
            context={"key": key},
        ),
    )


async def team_redirect(request: Request) -> Response:
    name = request.path_params["name"]
    return RedirectResponse(f"/catalog/default/group/{name}", status_code=308)


async def entity_page(request: Request) -> Response:
    params = request.path_params
    problem = address_problem(params["namespace"], params["kind"], params["name"])
    if problem is not None:
        return await missing_page(request, *problem)
    namespace, kind, name = (params[k].lower() for k in ("namespace", "kind", "name"))
    ref = f"{kind}:{namespace}/{name}"
    if kind == "group":
        return await _team_page(request, ref, name)

    def meta(data: dict[str, Any]) -> tuple[str, str]:
        entity = (data.get("EntityPage") or {}).get("entity") or {}
        title = display_name(entity) or name
        label = kind_label(kind).lower()
        return title, _described(
            entity, f"The {label} {title} in the catalog: its owner and relations."
        )

    operations: list[tuple[str, dict[str, Any]]] = [("EntityPage", {"ref": ref})]
    if kind == "component":
        operations.append(("EntityWorkloads", {"ref": ref}))
    page = Page("entity", "entity.html", operations, meta, _entity_found, ref, kind, "entity")
    page.personal = [("EntityViewer", {"ref": ref})]
    return await render(request, page)


async def _team_page(request: Request, ref: str, name: str) -> Response:
    def meta(data: dict[str, Any]) -> tuple[str, str]:
        team = (data.get("TeamPage") or {}).get("entity") or {}
        title = display_name(team) or name
        return title, _described(team, f"The team {title}: its members, what it owns and runs.")

    operations: list[tuple[str, dict[str, Any]]] = [
        ("TeamPage", {"ref": ref}),
        ("TeamWorkloads", {"ref": ref}),
    ]
    page = Page("team", "team.html", operations, meta, _entity_found, ref, "group", "team")
    page.personal = [("EntityViewer", {"ref": ref})]
    return await render(request, page)


async def missing_page(request: Request, status: int = 404, reason: str | None = None) -> Response:
    """An address the console has no page for, in its frame, with a way on."""

    def meta(data: dict[str, Any]) -> tuple[str, str]:
        return "Not found", "No page of the console is at this address."

    page = Page("missing", "missing.html", [], meta, status=status, context={"reason": reason})
    return await render(request, page)
