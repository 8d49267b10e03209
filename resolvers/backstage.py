"""Backstage's catalog read API over Atrium's catalog: pages, totals, look-ups and facets as
Backstage's clients ask for them, answered by the catalog's loaders and named queries.

Filters are ``sources.catalog.predicates``; what is Backstage's here is the rest of the
vocabulary (order fields, the text filter, the ``by-query`` cursor) turned into Atrium's.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, replace
from typing import Any, Final

import orjson

from loaders.catalog import ENTITY_BY_REF, RELATIONS_BY_REF
from loaders.registry import RequestLoaders
from sources.catalog import queries
from sources.catalog.listing import Order, list_entities
from sources.catalog.predicates import facet_values, parse_filters, to_where
from sources.catalog.queries import EntityRecord, Where
from sources.catalog.refs import normalize_ref
from sources.catalog.search_keys import FilterError, field_of
from sources.catalog.uids import entity_id_of
from sources.db import Database
from sources.errors import InvalidRef
from sources.text import unstorable

__all__ = [
    "MAX_FACET_VALUES",
    "ORDER_FIELDS",
    "Page",
    "QueryCursor",
    "Served",
    "by_ref",
    "by_refs",
    "by_uid",
    "facets",
    "order_of",
    "page",
    "total",
    "where_of",
]

# Backstage orders by any key; Atrium by those its indexes read in order (migration 0007).
ORDER_FIELDS: Final = {
    "metadata.name": "name",
    "metadata.title": "title",
    "kind": "kind",
    "spec.type": "type",
    "spec.lifecycle": "lifecycle",
    "spec.owner": "owner",
    "relations.ownedby": "owner",
    "spec.system": "system",
}
MAX_FACET_VALUES: Final = 10_000
_MAX_CURSOR: Final = 16_384


def order_of(field: str, direction: str) -> Order:
    key = ORDER_FIELDS.get(field.strip().lower())
    if key is None:
        raise FilterError(
            f"cannot order by {field[:80]!r}; Atrium orders by " + ", ".join(ORDER_FIELDS)
        )
    direction = direction.strip().lower()
    if direction not in ("asc", "desc"):
        raise FilterError(f"an order is asc or desc, not {direction[:20]!r}")
    return Order(key if direction == "asc" else f"{key}_desc")


async def where_of(
    db: Database, filters: list[str], term: str | None, fields: list[str] | None
) -> Where:
    """The condition of ``filter`` parameters and a text filter: Backstage's (the term within
    the values of ``fields``) when fields are named, else Atrium's full-text search."""
    sets = parse_filters(filters)
    term = (term or "").strip() or None
    if term is None:
        return to_where(sets)
    if unstorable(term) is not None or len(term) > 200:
        raise FilterError("fullTextFilterTerm: at most 200 characters PostgreSQL can store")
    if fields:
        for name in fields:
            field_of(name)  # an unknown field is the client's mistake, said now
        return to_where(sets, contains=(fields, term))
    search = await queries.prepare_search(db, term)
    if search.tsquery is None:
        return queries.NOTHING
    return to_where(sets, tsquery=search.tsquery)


@dataclass(frozen=True, slots=True)
class Served:
    """An entity as the API serves it: the record and its relations by type."""

    record: EntityRecord
    relations: dict[str, list[str]]


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Served]
    # The sort key and ref of the last item, when more follow it.
    position: tuple[str | None, str] | None


async def page(
    db: Database,
    loaders: RequestLoaders,
    where: Where,
    *,
    order: Order,
    after: tuple[str | None, str] | None,
    offset: int,
    limit: int,
    relations: bool,
) -> Page:
    """One keyset page (after ``after``, ``offset`` more skipped); ``relations`` false when
    the client's fields leave them out."""
    rows = await list_entities(db, where, order=order, after=after, limit=limit + 1, offset=offset)
    more = len(rows) > limit
    rows = rows[:limit]
    by_ref = loaders[ENTITY_BY_REF]
    for record, _ in rows:
        by_ref.prime(record.ref, record)
    items = await _served(loaders, [record for record, _ in rows], relations)
    position = (rows[-1][1], rows[-1][0].ref) if more and rows else None
    return Page(items, position)


async def total(db: Database, where: Where) -> int:
    return await queries.count_entities(db, where)


async def by_ref(loaders: RequestLoaders, ref: str, *, relations: bool) -> Served | None:
    """The entity a ref names exactly (kind, namespace and name, in any case)."""
    if unstorable(ref) is not None:
        raise FilterError("an entity ref must not hold a NUL character or lone surrogate")
    record = await loaders[ENTITY_BY_REF].load(ref.lower())
    if record is None:
        return None
    return (await _served(loaders, [record], relations))[0]


async def by_uid(db: Database, loaders: RequestLoaders, uid: str) -> Served | None:
    entity_id = entity_id_of(uid)
    ref = await queries.ref_of_id(db, entity_id) if entity_id is not None else None
    return await by_ref(loaders, ref, relations=True) if ref is not None else None


async def by_refs(
    db: Database,
    loaders: RequestLoaders,
    refs: list[str],
    where: Where | None,
    *,
    relations: bool,
) -> list[Served | None]:
    """Entities in the order asked, None for a ref naming nothing (or nothing ``where``
    matches, or not a ref at all)."""
    keys: list[str | None] = []
    for ref in refs:
        try:
            keys.append(normalize_ref(ref) if unstorable(ref) is None else None)
        except InvalidRef:
            keys.append(None)
    wanted = list(dict.fromkeys(k for k in keys if k is not None))
    records = dict(zip(wanted, await loaders[ENTITY_BY_REF].load_many(wanted), strict=True))
    found = [ref for ref, record in records.items() if record is not None]
    if where is not None:
        matching = await queries.refs_matching(db, found, where)
        found = [ref for ref in found if ref in matching]
    entities = await _served(loaders, [records[r] for r in found], relations)
    served = dict(zip(found, entities, strict=True))
    return [served.get(key) if key is not None else None for key in keys]


async def facets(db: Database, keys: list[str], where: Where) -> dict[str, list[tuple[str, int]]]:
    """Counts of each key's values among what ``where`` matches, most frequent first."""
    counted: dict[str, list[tuple[str, int]]] = {}
    for key in dict.fromkeys(keys):
        how = facet_values(key, where)
        if isinstance(how, queries.FacetField):
            counted[key] = await queries.facet_counts(db, how, where, MAX_FACET_VALUES)
            continue
        values, params = how
        limit = f"${len(where.params) + len(params) + 1}"
        sql = queries.facet_sql(values, where.sql, limit)
        rows = await db.fetch(sql, *where.params, *params, MAX_FACET_VALUES)
        counted[key] = [(str(row["value"]), row["count"]) for row in rows]
    return counted


async def _served(
    loaders: RequestLoaders, records: list[EntityRecord], relations: bool
) -> list[Served]:
    if not relations:
        return [Served(record, {}) for record in records]
    found = await loaders[RELATIONS_BY_REF].load_many([r.ref for r in records])
    return [Served(record, by_type) for record, by_type in zip(records, found, strict=True)]


@dataclass(frozen=True, slots=True)
class QueryCursor:
    """Where a ``by-query`` listing stands, with everything that defines it: Backstage's
    clients send the cursor alone for every page after the first."""

    filters: tuple[str, ...]
    order: Order
    position: tuple[str | None, str] | None = None  # None: the first page
    term: str | None = None
    fields: tuple[str, ...] | None = None
    total: int | None = None

    def at(self, position: tuple[str | None, str], total: int | None) -> QueryCursor:
        """The cursor of the page after ``position``."""
        return replace(self, position=position, total=total)

    def encode(self) -> str:
        if self.position is None:
            raise ValueError("a first page has no cursor")
        key, ref = self.position
        value: dict[str, Any] = {"f": self.filters, "o": self.order.value, "k": key, "r": ref}
        if self.term is not None:
            value["t"] = self.term
        if self.fields is not None:
            value["tf"] = self.fields
        if self.total is not None:
            value["n"] = self.total
        return base64.urlsafe_b64encode(orjson.dumps(value)).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> QueryCursor:
        """A cursor this API issued; FilterError for anything else (it reaches no SQL)."""
        refused = FilterError(f"cursor: {text[:40]!r} is not a cursor this API issued")
        if len(text) > _MAX_CURSOR:
            raise refused
        try:
            value = orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
            order = Order(value["o"])
        except (binascii.Error, ValueError, TypeError, KeyError, orjson.JSONDecodeError):
            raise refused from None
        key, ref, term = value.get("k"), value.get("r"), value.get("t")
        filters, fields, count = value.get("f"), value.get("tf"), value.get("n")
        nullable = order.key is not None and order.key.nullable
        if not (
            order.key is not None
            and _texts(filters)
            and (fields is None or _texts(fields))
            and _text(ref)
            and (_text(key) or (key is None and nullable))
            and (term is None or _text(term))
            and (count is None or (type(count) is int and 0 <= count < 2**31))
        ):
            raise refused
        return cls(
            tuple(filters),
            order,
            (key, ref),
            term,
            tuple(fields) if fields is not None else None,
            count,
        )


def _text(value: object) -> bool:
    return isinstance(value, str) and unstorable(value) is None


def _texts(value: object) -> bool:
    return isinstance(value, list) and all(_text(v) for v in value)
