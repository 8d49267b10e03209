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

from dataclasses import dataclass
from enum import Enum
from typing import Final

from sources.catalog.queries import COLUMNS, WHERE, EntityFilter, EntityRecord, SearchQuery
from sources.catalog.refs import KINDS
from sources.db import Executor

__all__ = ["LISTS", "LIST_BY_RELEVANCE", "Order", "SortKey", "list_entities"]


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


# $1..$10 are the filter and search (queries.WHERE); $11, $12 the key and ref of the last row
# seen (both null on a first page; the key alone null once past every row that has one); $13
# the page size. Each page also returns its rows' keys as PostgreSQL computed them, for cursors.
def _keyset(key: SortKey, descending: bool) -> str:
    op, direction = ("<", "desc") if descending else (">", "asc")
    expression = key.expression
    select = f"select {COLUMNS}, {expression} as sort_key from entities e"
    order = f"order by {expression} {direction}, e.ref {direction}"
    if not key.nullable:
        return f"""
{select}
where {WHERE}
  and ($12::text is null or ({expression}, e.ref) {op} ($11, $12))
{order}
limit $13
"""
    # A key that some kinds never have (a user has no owner, a system no lifecycle) would make
    # an index on the key alone read past every entity without one that the filter leaves
    # out, and the planner cannot tell how many that is. So each kind asked for ($14: every
    # kind when the filter names none) is read from an index on (kind, key, ref), where those
    # with the key and those without are each a range: at most a page of each kind with the
    # key, merged; then, only for what that left of the page (a limit of 0 reads nothing),
    # those without, by ref.
    kinds = "(select distinct unnest(coalesce($1::text[], $14::text[])) as kind) as k"
    return f"""
with keyed as (
    select page.* from {kinds}
    cross join lateral (
        {select}
        where e.kind = k.kind and {WHERE}
          and {expression} is not null
          and ($11::text is not null or $12::text is null)
          and ($12::text is null or ({expression}, e.ref) {op} ($11, $12))
        {order}
        limit $13
    ) page
    order by page.sort_key {direction}, page.ref {direction}
    limit $13
)
select * from keyed
union all
(select page.* from {kinds}
 cross join lateral (
     {select}
     where e.kind = k.kind and {WHERE}
       and {expression} is null
       and ($11::text is not null or $12::text is null or e.ref {op} $12)
     {order}
     limit $13
 ) page
 order by page.ref {direction}
 limit $13 - (select count(*) from keyed))
order by sort_key {direction} nulls last, ref {direction}
"""


LISTS: Final = {
    order: _keyset(key, order.descending) for order in Order if (key := order.key) is not None
}

# Relevance: title and name matches weigh most; an exact name beats everything. $11 the search
# text, $12 the offset, $13 the page size.
LIST_BY_RELEVANCE: Final = f"""
select {COLUMNS} from entities e
where {WHERE}
order by (lower(e.name) = $11) desc,
         ts_rank(e.search, to_tsquery('english', $10)) desc,
         e.ref
offset $12 limit $13
"""


async def list_entities(
    db: Executor,
    where: EntityFilter,
    search: SearchQuery | None,
    *,
    order: Order,
    after: tuple[str | None, str] | int | None,
    limit: int,
) -> list[tuple[EntityRecord, str | None]]:
    """One page, each entity with its sort key (None for relevance, and for an entity without
    the key). ``after`` is the (key, ref) of the last entity seen, or an offset for
    relevance."""
    tsquery = search.tsquery if search else None
    if search is not None and tsquery is None:
        return []
    if order is Order.RELEVANCE:
        if search is None:
            raise ValueError("relevance order needs a search")
        offset = after if isinstance(after, int) else 0
        rows = await db.fetch(
            LIST_BY_RELEVANCE, *where.params(), tsquery, search.text.strip().lower(), offset, limit
        )
        return [(EntityRecord.from_row(r), None) for r in rows]
    key, ref = after if isinstance(after, tuple) else (None, None)
    sort = order.key
    if sort is None:
        raise ValueError(f"{order} has no sort key")
    extra = (list(KINDS),) if sort.nullable else ()
    rows = await db.fetch(LISTS[order], *where.params(), tsquery, key, ref, limit, *extra)
    return [(EntityRecord.from_row(r), r["sort_key"]) for r in rows]
