"""Pages of the catalog in a chosen order.

Every order but relevance is keyset-paged on (sort key, ref): stable under inserts, and as fast
on the thousandth page as on the first, because a page is read in order from ranges of indexes
(migrations 0001 and 0007), not by sorting what the filter matches. Keys that may be missing
(owner, system, lifecycle, type) sort entities without one last in either direction: a page
reads those with a key first, and only when they run out does it read on among those without
(by ref), so a first page never looks at the rest. Relevance is offset-paged, since scores are
not a stable key.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import Enum
from typing import Final

from sources.catalog.queries import COLUMNS, NOTHING, EntityRecord, SearchQuery, Where
from sources.catalog.refs import KINDS
from sources.db import Executor

__all__ = ["Order", "SortKey", "keyset_sql", "list_entities", "ranked_page", "relevance_sql"]


class Order(Enum):
    """Values name the order inside cursors: a cursor of one order is refused by another."""

    NAME_ASC = "name"
    NAME_DESC = "name_desc"
    TITLE_ASC = "title"
    TITLE_DESC = "title_desc"
    KIND_ASC = "kind"
    KIND_DESC = "kind_desc"
    OWNER_ASC = "owner"
    OWNER_DESC = "owner_desc"
    SYSTEM_ASC = "system"
    SYSTEM_DESC = "system_desc"
    LIFECYCLE_ASC = "lifecycle"
    LIFECYCLE_DESC = "lifecycle_desc"
    TYPE_ASC = "type"
    TYPE_DESC = "type_desc"
    RELEVANCE = "relevance"

    @property
    def descending(self) -> bool:
        return self.value.endswith("_desc")

    @property
    def key(self) -> SortKey | None:
        """What the order sorts on; None for relevance."""
        return _KEYS.get(self.value.removesuffix("_desc"))


@dataclass(frozen=True, slots=True)
class SortKey:
    expression: str  # SQL over the entity ``e``, matching an index's expression exactly
    nullable: bool  # entities may have none: they come last, in either direction


_KEYS: Final = {
    "name": SortKey("lower(e.name)", nullable=False),
    "title": SortKey("lower(coalesce(e.title, e.name))", nullable=False),
    "kind": SortKey("e.kind", nullable=False),
    "owner": SortKey("e.owner_ref", nullable=True),
    "system": SortKey("e.system_ref", nullable=True),
    "lifecycle": SortKey("e.lifecycle", nullable=True),
    "type": SortKey("e.spec_type", nullable=True),
}


@functools.lru_cache(maxsize=256)
def keyset_sql(order: Order, where: str, n: int) -> str:
    """A page in ``order`` of the entities ``where`` (with parameters $1..$n) matches. Then
    $n+1, $n+2 the key and ref of the last row seen (both null on a first page; the key alone
    null once past every row that has one); $n+3 the page size, $n+4 how many rows to skip
    first (an offset, for clients that page so); for a key some kinds lack, $n+5 the kinds
    ``where`` may match. Each page
    also returns its rows' keys as PostgreSQL computed them, for cursors."""
    key = order.key
    if key is None:
        raise ValueError(f"{order} has no sort key")
    last_key, last_ref, size, skip, kinds_param = (f"${n + i}" for i in range(1, 6))
    op, direction = ("<", "desc") if order.descending else (">", "asc")
    expression = key.expression
    select = f"select {COLUMNS}, {expression} as sort_key from entities e"
    sort = f"order by {expression} {direction}, e.ref {direction}"
    if not key.nullable:
        return f"""
{select}
where {where}
  and ({last_ref}::text is null or ({expression}, e.ref) {op} ({last_key}, {last_ref}))
{sort}
limit {size} offset {skip}
"""
    # A key that some kinds never have (a user has no owner, a system no lifecycle) would make
    # an index on the key alone read past every entity without one that the filter leaves
    # out, and the planner cannot tell how many that is. So each kind asked for (every kind
    # when the filter names none) is read from an index on (kind, key, ref), where those with
    # the key and those without are each a range: at most a page of each kind with the key,
    # merged; then, only for what that left of the page (a limit of 0 reads nothing), those
    # without, by ref.
    wanted = f"({size}::bigint + {skip}::bigint)"
    kinds = f"(select distinct unnest({kinds_param}::text[]) as kind) as k"
    return f"""
with keyed as (
    select page.* from {kinds}
    cross join lateral (
        {select}
        where e.kind = k.kind and {where}
          and {expression} is not null
          and ({last_key}::text is not null or {last_ref}::text is null)
          and ({last_ref}::text is null or ({expression}, e.ref) {op} ({last_key}, {last_ref}))
        {sort}
        limit {wanted}
    ) page
    order by page.sort_key {direction}, page.ref {direction}
    limit {wanted}
)
select * from (
    select * from keyed
    union all
    (select page.* from {kinds}
     cross join lateral (
         {select}
         where e.kind = k.kind and {where}
           and {expression} is null
           and ({last_key}::text is not null or {last_ref}::text is null or e.ref {op} {last_ref})
         {sort}
         limit {wanted}
     ) page
     order by page.ref {direction}
     limit {wanted} - (select count(*) from keyed))
) as found
order by sort_key {direction} nulls last, ref {direction}
limit {size} offset {skip}
"""


def relevance_sql(where: str, n: int, rank: str) -> str:
    """Title and name matches weigh most; an exact name beats everything. $n+1 the search
    text, $n+2 the offset, $n+3 the page size; ``rank`` the parameter of the tsquery.

    Every match is ranked to find a page, so the same pass counts them: each row also carries
    the number of matches (``total``), and a count of its own would read every match again.
    The pass keeps only what ranks a match (its id, keys and ref; the inner query is fenced
    so the rank is computed before the count, not carried as the whole text vector), and the
    page's entities are read by id afterwards."""
    return f"""
select {COLUMNS}, r.total from (
    select m.id, m.exact, m.score, m.ref, count(*) over () as total
    from (
        select e.id, lower(e.name) = ${n + 1} as exact,
               ts_rank(e.search, to_tsquery('english', {rank})) as score, e.ref
        from entities e
        where {where}
        offset 0
    ) m
    order by m.exact desc, m.score desc, m.ref
    offset ${n + 2} limit ${n + 3}
) r
join entities e on e.id = r.id
order by r.exact desc, r.score desc, r.ref
"""


async def ranked_page(
    db: Executor, where: Where, search: SearchQuery, *, start: int, limit: int
) -> tuple[list[EntityRecord], int | None]:
    """A page of the matches of a search by relevance, from the ``start``-th, and how many
    matches there are in all (None when the page is empty: past the last match, or none)."""
    if where.sql == NOTHING.sql:
        return [], 0
    if where.rank is None:
        raise ValueError("relevance order needs a search")
    sql = relevance_sql(where.sql, len(where.params), where.rank)
    rows = await db.fetch(sql, *where.params, search.text.strip().lower(), start, limit)
    return [EntityRecord.from_row(r) for r in rows], rows[0]["total"] if rows else None


async def list_entities(
    db: Executor,
    where: Where,
    *,
    order: Order,
    after: tuple[str | None, str] | int | None,
    limit: int,
    offset: int = 0,
    search: SearchQuery | None = None,
) -> list[tuple[EntityRecord, str | None]]:
    """One page, each entity with its sort key (None for relevance, and for an entity without
    the key). ``after`` is the (key, ref) of the last entity seen, or an offset for relevance
    (``search`` then says what was searched); ``offset`` skips that many more."""
    if where.sql == NOTHING.sql:
        return []
    n = len(where.params)
    if order is Order.RELEVANCE:
        if search is None:
            raise ValueError("relevance order needs a search")
        start = (after if isinstance(after, int) else 0) + offset
        records, _ = await ranked_page(db, where, search, start=start, limit=limit)
        return [(record, None) for record in records]
    key, ref = after if isinstance(after, tuple) else (None, None)
    sort = order.key
    if sort is None:
        raise ValueError(f"{order} has no sort key")
    # Only a key some kinds lack reads kind by kind.
    kinds = [where.kinds if where.kinds is not None else list(KINDS)] if sort.nullable else []
    rows = await db.fetch(
        keyset_sql(order, where.sql, n), *where.params, key, ref, limit, offset, *kinds
    )
    return [(EntityRecord.from_row(r), r["sort_key"]) for r in rows]
