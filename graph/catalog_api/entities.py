"""The entity routes of Backstage's catalog API: lists, pages with cursors, look-ups, facets.

Parameters are read as Backstage's catalog backend reads them (its ``parseEntity*Params``):
``filter`` repeated, ``fields`` repeated or comma-separated, ``order=asc:metadata.name`` for
``/entities``, ``orderField=metadata.name,asc`` for ``/entities/by-query``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Final

import orjson

from graph.catalog_api.http import Answer, ApiError, Call, not_found
from graph.catalog_api.shape import entity_json, needs_relations, parse_fields, select_fields
from resolvers import backstage as resolve
from resolvers.backstage import Page, QueryCursor, Served
from sources.catalog.listing import Order
from sources.catalog.queries import Where
from sources.catalog.search_keys import FilterError

__all__ = [
    "entities",
    "entities_by_name",
    "entities_by_refs",
    "entities_by_uid",
    "entity_facets",
    "query_entities",
]

# Whole-catalog answers are streamed this many entities at a time, each read by keyset.
CHUNK: Final = 500
MAX_LIMIT: Final = 10_000
DEFAULT_QUERY_LIMIT: Final = 20  # Backstage's
MAX_REFS: Final = 1_000  # the most catalog-client sends at once
MAX_BODY: Final = 1 << 20


async def entities(call: Call) -> Answer:
    """``GET /entities``: a JSON list; with ``limit``, one page whose ``Link`` header names
    the next (``after``), as Backstage's; without, every match, streamed."""
    fields = parse_fields(call.values("fields"))
    order = _order(call.values("order"))
    limit = _limit(call, minimum=1)
    offset = call.integer("offset", minimum=0) or 0
    after = call.value("after")
    if after == "":
        raise FilterError("Invalid after, must not be empty")
    position = None
    if after is not None:
        cursor = QueryCursor.decode(after)
        if cursor.order is not order:
            raise FilterError("after: the cursor is of another order than this request's")
        position = cursor.position
    where = await resolve.where_of(call.context.db, call.values("filter"), None, None)
    if limit is None:
        return Answer(stream=_everything(call, where, order, position, offset, fields))
    page = await _page(call, where, order, position, offset, limit, fields)
    headers = {}
    if page.position is not None:
        url = call.request.url.remove_query_params("offset").include_query_params(
            after=QueryCursor((), order).at(page.position, None).encode()
        )
        headers["link"] = f'<{url.path}?{url.query}>; rel="next"'
    return Answer(_shaped(page.items, fields), headers=headers, tags=_tags(where))


async def _everything(
    call: Call,
    where: Where,
    order: Order,
    position: tuple[str | None, str] | None,
    offset: int,
    fields: list[str] | None,
) -> AsyncIterator[bytes]:
    """Every match, a chunk at a time, each chunk with loaders of its own: a request's
    loaders keep what they loaded, which for a whole catalog would be all of it."""
    yield b"["
    separator = b""
    while True:
        context = await call.fresh_context()
        page = await resolve.page(
            context.db,
            context.loaders,
            where,
            order=order,
            after=position,
            offset=offset,
            limit=CHUNK,
            relations=needs_relations(fields),
        )
        for served in page.items:
            yield separator + orjson.dumps(select_fields(entity_json(served), fields))
            separator = b","
        if page.position is None:
            break
        position, offset = page.position, 0
    yield b"]"


async def query_entities(call: Call) -> Answer:
    """``GET /entities/by-query``: ``{items, totalItems, pageInfo: {nextCursor}}``; the
    cursor carries the filter, order and text filter, so later pages send it alone."""
    fields = parse_fields(call.values("fields"))
    limit = _limit(call, minimum=0)
    limit = DEFAULT_QUERY_LIMIT if limit is None else limit
    text = call.value("cursor")
    if text:
        cursor = QueryCursor.decode(text)
        offset = 0
    else:
        counting = call.value("totalItems") or "include"
        if counting not in ("include", "exclude"):
            raise FilterError("totalItems is include or exclude")
        cursor = QueryCursor(
            filters=tuple(call.values("filter")),
            order=_order_fields(call.values("orderField")),
            term=call.value("fullTextFilterTerm"),
            fields=_text_fields(call.values("fullTextFilterFields")),
            total=None if counting == "include" else 0,
        )
        offset = call.integer("offset", minimum=0) or 0
    db = call.context.db
    where = await resolve.where_of(db, list(cursor.filters), cursor.term, _list(cursor.fields))
    total = cursor.total if cursor.total is not None else await resolve.total(db, where)
    page = await _page(call, where, cursor.order, cursor.position, offset, limit, fields)
    info = {}
    if page.position is not None:
        info["nextCursor"] = cursor.at(page.position, total).encode()
    body = {"items": _shaped(page.items, fields), "totalItems": total, "pageInfo": info}
    return Answer(body, tags=_tags(where))


async def entities_by_uid(call: Call) -> Answer:
    uid = call.request.path_params["uid"]
    found = await resolve.by_uid(call.context.db, call.context.loaders, uid)
    if found is None:
        raise not_found(f"No entity with uid {uid}")
    return Answer(entity_json(found))


async def entities_by_name(call: Call) -> Answer:
    params = call.request.path_params
    kind, namespace, name = params["kind"], params["namespace"], params["name"]
    found = await resolve.by_ref(call.context.loaders, f"{kind}:{namespace}/{name}", relations=True)
    if found is None:
        raise not_found(
            f"No entity named '{name}' found, with kind '{kind}' in namespace '{namespace}'"
        )
    return Answer(entity_json(found))


async def entities_by_refs(call: Call) -> Answer:
    """``POST /entities/by-refs`` ``{entityRefs, fields}`` (and ``filter`` in the query):
    ``{items}`` in the order asked, null for a ref that names nothing the filter matches."""
    body = await _json_body(call)
    if "query" in body:
        raise FilterError("Atrium does not take predicate queries (query); use filter parameters")
    refs = body.get("entityRefs")
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise FilterError("entityRefs must be a list of entity refs")
    if len(refs) > MAX_REFS:
        raise FilterError(f"entityRefs: at most {MAX_REFS} at once")
    raw_fields = body.get("fields") or []
    if not isinstance(raw_fields, list) or not all(isinstance(f, str) for f in raw_fields):
        raise FilterError("fields must be a list of strings")
    fields = parse_fields(raw_fields)
    filters = call.values("filter")
    db = call.context.db
    where = await resolve.where_of(db, filters, None, None) if any(filters) else None
    found = await resolve.by_refs(
        db, call.context.loaders, refs, where, relations=needs_relations(fields)
    )
    items = [select_fields(entity_json(s), fields) if s is not None else None for s in found]
    return Answer({"items": items})


async def entity_facets(call: Call) -> Answer:
    """``GET /entity-facets?facet=kind&facet=spec.type``: ``{facets: {key: [{value,
    count}]}}``, most frequent first, at most ``MAX_FACET_VALUES`` values each."""
    keys = [k for k in call.values("facet") if k.strip()]
    if not keys:
        raise FilterError("Missing facet parameter")
    if len(keys) > 20:
        raise FilterError("at most 20 facets at once")
    where = await resolve.where_of(call.context.db, call.values("filter"), None, None)
    counted = await resolve.facets(call.context.db, keys, where)
    facets = {
        key: [{"value": value, "count": count} for value, count in values]
        for key, values in counted.items()
    }
    return Answer({"facets": facets}, tags=_tags(where))


async def _page(
    call: Call,
    where: Where,
    order: Order,
    position: tuple[str | None, str] | None,
    offset: int,
    limit: int,
    fields: list[str] | None,
) -> Page:
    return await resolve.page(
        call.context.db,
        call.context.loaders,
        where,
        order=order,
        after=position,
        offset=offset,
        limit=limit,
        relations=needs_relations(fields),
    )


def _shaped(items: list[Served], fields: list[str] | None) -> list[dict[str, Any]]:
    return [select_fields(entity_json(served), fields) for served in items]


def _tags(where: Where) -> tuple[str, ...]:
    """A list of some kinds changes with any entity of those kinds; of any kind, with any."""
    if where.kinds is None:
        return ("catalog",)
    return tuple(f"kind:{kind.lower()}" for kind in where.kinds)


def _limit(call: Call, *, minimum: int) -> int | None:
    limit = call.integer("limit", minimum=minimum)
    if limit is not None and limit > MAX_LIMIT:
        raise FilterError(f"Invalid limit, at most {MAX_LIMIT}")
    return limit


def _order(values: list[str]) -> Order:
    """``order=asc:metadata.name`` (Backstage's ``parseEntityOrderParams``), one of them."""
    if not values:
        return Order.NAME_ASC
    if len(values) > 1:
        raise FilterError("Atrium orders by one field; give one order parameter")
    direction, colon, field = values[0].partition(":")
    if not colon or direction not in ("asc", "desc") or not field:
        raise FilterError(
            f'Invalid order parameter "{values[0][:80]}", expected "<asc or desc>:<field name>"'
        )
    return resolve.order_of(field, direction)


def _order_fields(values: list[str]) -> Order:
    """``orderField=metadata.name,asc`` (the direction optional: ascending), one of them."""
    if not values:
        return Order.NAME_ASC
    if len(values) > 1:
        raise FilterError("Atrium orders by one field; give one orderField parameter")
    field, _, direction = values[0].partition(",")
    return resolve.order_of(field, direction or "asc")


def _text_fields(values: list[str]) -> tuple[str, ...] | None:
    fields = tuple(f.strip() for v in values for f in v.split(",") if f.strip())
    if len(fields) > 20:
        raise FilterError("fullTextFilterFields: at most 20")
    return fields or None


def _list(values: tuple[str, ...] | None) -> list[str] | None:
    return list(values) if values is not None else None


async def _json_body(call: Call) -> dict[str, Any]:
    size = 0
    chunks = []
    async for chunk in call.request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise ApiError(413, "PayloadTooLargeError", f"the body is over {MAX_BODY} bytes")
        chunks.append(chunk)
    try:
        body = orjson.loads(b"".join(chunks))
    except orjson.JSONDecodeError:
        raise FilterError("the body must be JSON") from None
    if not isinstance(body, dict):
        raise FilterError("the body must be a JSON object")
    return body
