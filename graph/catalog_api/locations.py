"""The read side of Backstage's ``/locations``, and an entity's ``/ancestry``."""

from __future__ import annotations

from typing import Any

from graph.catalog_api.http import Answer, Call, not_found
from graph.catalog_api.shape import entity_json
from resolvers import backstage_locations as resolve
from sources.catalog.locations import Location
from sources.catalog.search_keys import FilterError
from sources.text import unstorable

__all__ = ["ancestry", "location", "location_by_entity", "locations"]

# Locations are the origins of every entity: any change to the catalog may change them.
_EVERYTHING = ("catalog",)


def _location(found: Location) -> dict[str, Any]:
    return {"id": found.id, "type": found.type, "target": found.target}


async def locations(call: Call) -> Answer:
    """``GET /locations``: ``[{data: {id, type, target}}]``, as Backstage wraps them."""
    found = await resolve.locations(call.context.db)
    return Answer([{"data": _location(item)} for item in found], tags=_EVERYTHING)


async def location(call: Call) -> Answer:
    location_id = call.request.path_params["id"]
    found = await resolve.location(call.context.db, location_id)
    if found is None:
        raise not_found(f"Found no location with ID {location_id}")
    return Answer(_location(found), tags=_EVERYTHING)


async def location_by_entity(call: Call) -> Answer:
    ref = _ref(call)
    found = await resolve.entity_location(call.context.db, ref)
    if found is None:
        raise not_found(f"No location for entity {ref}")
    # Read by SQL, not through a loader: what it depends on is said here.
    return Answer(_location(found), tags=(ref,))


async def ancestry(call: Call) -> Answer:
    """``{rootEntityRef, items: [{entity, parentEntityRefs}]}``: the entity first."""
    ref = _ref(call)
    found = await resolve.ancestry(call.context.db, call.context.loaders, ref)
    if found is None:
        raise not_found(f"No such entity {ref}")
    items = [
        {"entity": entity_json(item.served), "parentEntityRefs": item.parents} for item in found
    ]
    root = found[0].served.record.ref
    return Answer({"rootEntityRef": root, "items": items}, tags=_EVERYTHING)


def _ref(call: Call) -> str:
    params = call.request.path_params
    ref = f"{params['kind']}:{params['namespace']}/{params['name']}".lower()
    if unstorable(ref) is not None:
        raise FilterError("an entity ref must not hold a NUL character or lone surrogate")
    return ref
