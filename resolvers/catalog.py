"""Catalog resolvers: they turn arguments into loader calls and named queries."""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Awaitable
from dataclasses import dataclass

import orjson

from loaders.cache_first import CacheFirstLoader
from loaders.catalog import ENTITY_BY_REF, RELATED_REFS
from loaders.memory import MISSING
from loaders.registry import RequestLoaders
from sources.catalog import queries
from sources.catalog.documents import parse_documents
from sources.catalog.listing import Order, list_entities, ranked_page
from sources.catalog.placeholders import FetchPolicy
from sources.catalog.queries import EntityFilter, EntityRecord, FacetField, Where
from sources.catalog.refs import canonical_kind, normalize_ref
from sources.catalog.store import ApplyResult, apply_batch
from sources.catalog.store import delete_entity as delete_stored
from sources.db import Database
from sources.errors import CatalogError
from sources.text import unstorable

__all__ = [
    "EntitiesPage",
    "FilterArgs",
    "apply_entities",
    "count",
    "delete_entity",
    "entities",
    "entities_page",
    "entity",
    "facets",
    "related",
    "related_refs",
]


class InvalidCursor(CatalogError):
    pass


# Relevance cursors are offsets; no catalog holds more entities than this.
_MAX_OFFSET = 2**31 - 1


@dataclass(frozen=True, slots=True)
class FilterArgs:
    """Filter values as a client wrote them: refs may be partial, kinds in any case."""

    kind: list[str] | None = None
    type: list[str] | None = None
    owner: list[str] | None = None
    lifecycle: list[str] | None = None
    tag: list[str] | None = None
    system: list[str] | None = None
    namespace: list[str] | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    refs: list[str] | None = None

    def normalise(self) -> EntityFilter:
        for values in (self.type, self.lifecycle, self.tag, self.namespace):
            if values and any("\x00" in v for v in values):
                raise CatalogError("filter values must not contain NUL characters")
        for mapping in (self.labels, self.annotations):
            if mapping and any("\x00" in k + v for k, v in mapping.items()):
                raise CatalogError("filter values must not contain NUL characters")
        return EntityFilter(
            kinds=_each(self.kind, canonical_kind),
            types=self.type or None,
            owners=_each(self.owner, lambda r: normalize_ref(r, default_kind="Group")),
            lifecycles=self.lifecycle or None,
            tags=[t.lower() for t in self.tag] if self.tag else None,
            systems=_each(self.system, lambda r: normalize_ref(r, default_kind="System")),
            namespaces=[n.lower() for n in self.namespace] if self.namespace else None,
            labels=self.labels or None,
            annotations=self.annotations or None,
            # Whole refs only: a ref filter names entities, so no kind is taken for granted.
            # An empty list is kept, and matches nothing.
            refs=None if self.refs is None else list(dict.fromkeys(map(normalize_ref, self.refs))),
        )


def _each(values: list[str] | None, fn: object) -> list[str] | None:
    if not values:
        return None
    return [fn(v) for v in values]  # type: ignore[operator]


@dataclass(frozen=True, slots=True)
class EntitiesPage:
    records: list[EntityRecord]
    cursors: list[str]
    has_next: bool
    has_previous: bool
    where: Where
    total: int | None = None  # known when the page's query counted the matches
    counting: asyncio.Future[int] | None = None  # the total, counted beside the page


async def entity(loaders: RequestLoaders, ref: str) -> EntityRecord | None:
    return await loaders[ENTITY_BY_REF].load(normalize_ref(ref))  # type: ignore[no-any-return]


async def entities(loaders: RequestLoaders, refs: list[str]) -> list[EntityRecord | None]:
    """Entities by ref, in the order asked, batched into one query."""
    normalised = [normalize_ref(ref) for ref in refs]
    return await loaders[ENTITY_BY_REF].load_many(normalised)


async def related_refs(loaders: RequestLoaders, ref: str, relation: str) -> list[str]:
    return await loaders[RELATED_REFS].load((ref, relation))  # type: ignore[no-any-return]


async def related(
    loaders: RequestLoaders, ref: str, relation: str, kind: str | None = None
) -> list[EntityRecord]:
    """Existing entities at the end of a relation; refs that resolve to nothing are left out."""
    refs = _of_kind(await related_refs(loaders, ref, relation), kind)
    records = await loaders[ENTITY_BY_REF].load_many(refs)
    return [r for r in records if r is not None]


def related_now(
    loaders: RequestLoaders, ref: str, relation: str, kind: str | None = None
) -> list[EntityRecord] | Awaitable[list[EntityRecord]]:
    """``related``, answered at once (no coroutine, no task, no turn of the loop) when the
    request or the in-process cache already holds the relation and every entity at its end;
    otherwise ``related``'s coroutine, to be awaited."""
    refs_loader, by_ref = loaders[RELATED_REFS], loaders[ENTITY_BY_REF]
    if isinstance(refs_loader, CacheFirstLoader) and isinstance(by_ref, CacheFirstLoader):
        refs = refs_loader.known((ref, relation))
        if refs is not MISSING:
            records = by_ref.known_many(_of_kind(refs, kind))
            if records is not MISSING:
                return [r for r in records if r is not None]
    return related(loaders, ref, relation, kind)


def entity_now(
    loaders: RequestLoaders, ref: str
) -> EntityRecord | Awaitable[EntityRecord | None] | None:
    """``entity``, answered at once when the request or the in-process cache holds it."""
    by_ref = loaders[ENTITY_BY_REF]
    if isinstance(by_ref, CacheFirstLoader):
        record = by_ref.known(normalize_ref(ref))
        if record is not MISSING:
            return record  # type: ignore[no-any-return]
    return entity(loaders, ref)


def _of_kind(refs: list[str], kind: str | None) -> list[str]:
    if kind is None:
        return refs
    prefix = f"{kind.lower()}:"
    return [r for r in refs if r.startswith(prefix)]


async def entities_page(
    db: Database,
    loaders: RequestLoaders,
    filter_args: FilterArgs | None,
    search: str | None,
    *,
    order: Order | None,
    first: int,
    after: str | None,
    with_total: bool = False,
) -> EntitiesPage:
    """One page of a filtered, searched list; relevance order by default when searching.
    ``with_total``: the total is wanted too, so it is counted while the page is read, on a
    connection of its own (a search counts its matches as it ranks them)."""
    where = (filter_args or FilterArgs()).normalise()
    prepared = await queries.prepare_search(db, search) if search and search.strip() else None
    if order is None:
        order = Order.RELEVANCE if prepared is not None else Order.NAME_ASC
    elif order is Order.RELEVANCE and prepared is None:
        raise CatalogError("ordering by relevance needs a search")
    position = _decode_cursor(after, order) if after else None
    condition = where.where(prepared)
    total = None
    counting = None
    if order is Order.RELEVANCE:
        assert prepared is not None  # relevance without a search was refused above
        start = position if isinstance(position, int) else 0
        records, total = await ranked_page(db, condition, prepared, start=start, limit=first + 1)
        rows: list[tuple[EntityRecord, str | None]] = [(r, None) for r in records]
    else:
        if with_total:
            counting = asyncio.ensure_future(queries.count_entities(db, condition))
            # Retrieved here too: a request that fails before asking for its total leaves it.
            counting.add_done_callback(_retrieve)
        try:
            rows = await list_entities(db, condition, order=order, after=position, limit=first + 1)
        except BaseException:
            if counting is not None:
                counting.cancel()
            raise
    has_next = len(rows) > first
    rows = rows[:first]
    by_ref = loaders[ENTITY_BY_REF]
    for record, _ in rows:
        by_ref.prime(record.ref, record)
    if order is Order.RELEVANCE:
        start = position if isinstance(position, int) else 0
        cursors = [_encode_cursor(start + i + 1) for i in range(len(rows))]
    else:
        cursors = [_encode_cursor([order.value, key, record.ref]) for record, key in rows]
    records = [record for record, _ in rows]
    return EntitiesPage(records, cursors, has_next, after is not None, condition, total, counting)


def _retrieve(future: asyncio.Future[int]) -> None:
    if not future.cancelled():
        future.exception()


async def count(db: Database, page: EntitiesPage) -> int:
    if page.total is not None:
        return page.total
    if page.counting is not None:
        return await page.counting
    return await queries.count_entities(db, page.where)


async def facets(
    db: Database, field: FacetField, filter_args: FilterArgs | None, search: str | None, limit: int
) -> list[tuple[str, int]]:
    where = (filter_args or FilterArgs()).normalise()
    prepared = await queries.prepare_search(db, search) if search and search.strip() else None
    return await queries.facet_counts(db, field, where.where(prepared), limit)


async def apply_entities(
    db: Database, yaml_text: str, location: str, fetch: FetchPolicy
) -> ApplyResult:
    """Validate and store the documents of one YAML text as coming from ``location``.

    A caller's location is its own: re-applying it without an entity removes that entity.
    Placeholders may name URLs ``fetch`` allows (read in a thread: the loop serves on).
    """
    batch = await asyncio.to_thread(parse_documents, yaml_text, location, fetch=fetch)
    return await apply_batch(db, batch)


def _encode_cursor(value: object) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(value)).decode()


def _decode_cursor(cursor: str, order: Order) -> tuple[str | None, str] | int:
    """The position a cursor of ``order`` stands for: an offset for relevance, else the sort
    key and ref of the last entity seen (the key null past every entity that has one)."""
    try:
        value = orjson.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        raise InvalidCursor(f"after: {cursor[:40]!r} is not a cursor this API issued") from None
    if order is Order.RELEVANCE:
        if isinstance(value, int) and 0 <= value <= _MAX_OFFSET:
            return value
    elif isinstance(value, list) and len(value) == 3 and value[0] == order.value:
        _, key, ref = value
        nullable = order.key is not None and order.key.nullable
        if (
            isinstance(ref, str)
            and unstorable(ref) is None
            and ((isinstance(key, str) and unstorable(key) is None) or (key is None and nullable))
        ):
            return key, ref
    elif (
        order in (Order.NAME_ASC, Order.NAME_DESC)
        and isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, str) and unstorable(v) is None for v in value)
    ):
        # A name cursor from before cursors named their order: pages open in browsers and
        # answers still in the response cache hold them.
        return value[0], value[1]
    # Decoded, a cursor is JSON the client could have written: one this API never issued (a
    # NUL inside, an offset past any catalog), or one of another order, must not reach SQL.
    raise InvalidCursor(
        f"after: {cursor[:40]!r} is not a cursor this API issued for this ordering and search"
    )


async def delete_entity(db: Database, ref: str) -> list[str]:
    """The refs the deletion changed; empty when nothing had that ref."""
    return await delete_stored(db, ref)
