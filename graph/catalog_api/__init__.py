"""Backstage's catalog read API under ``/api/catalog``: what a tool written against
``@backstage/catalog-client`` asks, answered from the catalog's resolvers, loaders and caches
as ``/graphql`` is.

=================================================  ======================================
route                                              module
=================================================  ======================================
``GET /entities``, ``/entities/by-query``,          ``entities``
``/entities/by-uid/{uid}``,
``/entities/by-name/{kind}/{namespace}/{name}``,
``POST /entities/by-refs``, ``GET /entity-facets``
``GET /entities/by-name/.../ancestry``,             ``locations``
``/locations``, ``/locations/{id}``,
``/locations/by-entity/{kind}/{namespace}/{name}``
=================================================  ======================================

Who may ask, kept answers, errors and metrics: ``http``; entities' JSON: ``shape``.
"""

from __future__ import annotations

from typing import Final

from starlette.routing import Mount, Route

from graph.catalog_api import entities, locations
from graph.catalog_api.http import Answer, Call, Handler, endpoint, not_found

__all__ = ["PREFIX", "catalog_api"]

PREFIX: Final = "/api/catalog"
_ANY_METHOD: Final = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
_ENTITY: Final = "/{kind}/{namespace}/{name}"

_ROUTES: Final[list[tuple[str, str, Handler]]] = [
    ("GET", "/entities", entities.entities),
    ("GET", "/entities/by-query", entities.query_entities),
    ("GET", "/entities/by-uid/{uid}", entities.entities_by_uid),
    ("GET", f"/entities/by-name{_ENTITY}", entities.entities_by_name),
    ("GET", f"/entities/by-name{_ENTITY}/ancestry", locations.ancestry),
    ("POST", "/entities/by-refs", entities.entities_by_refs),
    ("GET", "/entity-facets", entities.entity_facets),
    ("GET", "/locations", locations.locations),
    ("GET", "/locations/{id}", locations.location),
    ("GET", f"/locations/by-entity{_ENTITY}", locations.location_by_entity),
]


async def _no_route(call: Call) -> Answer:
    request = call.request
    raise not_found(f"Atrium's catalog API has no {request.method} {request.url.path}")


def catalog_api() -> Mount:
    """The routes, mounted at ``PREFIX``; anything else under it is Backstage's 404."""
    routes = [
        Route(path, endpoint(f"{method} {path}", handler), methods=[method])
        for method, path, handler in _ROUTES
    ]
    routes.append(Route("/{path:path}", endpoint("other", _no_route), methods=_ANY_METHOD))
    return Mount(PREFIX, routes=routes)
