"""Reading the catalog: entities by ref, relations, the filter and search of lists, facets."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Final

import asyncpg

from sources.catalog.vocabulary import corrections
from sources.db import Executor

__all__ = [
    "COLUMNS",
    "WHERE",
    "EntityFilter",
    "EntityRecord",
    "FacetField",
    "SearchQuery",
    "count_entities",
    "entities_by_refs",
    "facet_counts",
    "first_refs_owned_by",
    "prepare_search",
    "refs_owned_by",
    "relations_of",
]

COLUMNS: Final = """
    e.id, e.ref, e.kind, e.namespace, e.name, e.title, e.description, e.spec_type, e.lifecycle,
    e.owner_ref, e.system_ref, e.tags, e.labels, e.annotations, e.links, e.spec, e.unavailable,
    e.updated_at
"""


@dataclass(frozen=True, slots=True)
class EntityRecord:
    id: int
    ref: str
    kind: str
    namespace: str
    name: str
    title: str | None
    description: str | None
    spec_type: str | None
    lifecycle: str | None
    owner_ref: str | None
    system_ref: str | None
    tags: list[str]
    labels: dict[str, str]
    annotations: dict[str, str]
    links: list[dict[str, str]]
    spec: dict[str, Any]
    # Fields whose placeholder could not be read at the last import: path → why.
    unavailable: dict[str, str]
    updated_at: datetime  # last: the cache's decoder reads it from the end

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> EntityRecord:
        return cls(*row[:18])


@dataclass(frozen=True, slots=True)
class EntityFilter:
    """Each field is any-of; fields combine with and. Refs and kinds are already normalised."""

    kinds: list[str] | None = None
    types: list[str] | None = None
    owners: list[str] | None = None
    lifecycles: list[str] | None = None
    tags: list[str] | None = None
    systems: list[str] | None = None
    namespaces: list[str] | None = None
    labels: dict[str, str] | None = None
    refs: list[str] | None = None  # an empty list matches nothing

    @property
    def kinds_only(self) -> bool:
        """True when nothing but kinds is filtered: the precomputed counts can answer."""
        return self.params()[1:] == (None,) * 8

    def params(self) -> tuple[Any, ...]:
        return (
            self.kinds,
            self.types,
            self.owners,
            self.lifecycles,
            self.tags,
            self.systems,
            self.namespaces,
            self.labels,
            self.refs,
        )


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A user's search, turned into a tsquery text of sanitised prefixes and corrections."""

    text: str
    tsquery: str | None  # None: nothing searchable in the text; matches nothing


class FacetField(Enum):
    """Values are the names ``facet_counts`` uses (see facet_rows() in the migration)."""

    KIND = "kind"
    TYPE = "type"
    OWNER = "owner"
    LIFECYCLE = "lifecycle"
    NAMESPACE = "namespace"
    SYSTEM = "system"
    TAG = "tag"


_FACET_COLUMNS: Final = {
    FacetField.KIND: "kind",
    FacetField.TYPE: "spec_type",
    FacetField.OWNER: "owner_ref",
    FacetField.LIFECYCLE: "lifecycle",
    FacetField.NAMESPACE: "namespace",
    FacetField.SYSTEM: "system_ref",
}


# $1..$9 are EntityFilter.params(); $10 a tsquery text or null. A single value of a column
# lists sort on is compared as an equality, not as a one-item array: the planner then takes
# that column as fixed and reads a sorted page from a range of an index that starts with it
# (it never matches "= any" to an index's order).
WHERE: Final = """
    ($1::text[] is null
     or case when cardinality($1) = 1 then e.kind = $1[1] else e.kind = any($1) end)
    and ($2::text[] is null
         or case when cardinality($2) = 1 then e.spec_type = $2[1] else e.spec_type = any($2) end)
    and ($3::text[] is null
         or case when cardinality($3) = 1 then e.owner_ref = $3[1] else e.owner_ref = any($3) end)
    and ($4::text[] is null
         or case when cardinality($4) = 1 then e.lifecycle = $4[1] else e.lifecycle = any($4) end)
    and ($5::text[] is null or e.tags && $5)
    and ($6::text[] is null
         or case when cardinality($6) = 1 then e.system_ref = $6[1] else e.system_ref = any($6) end)
    and ($7::text[] is null or e.namespace = any($7))
    and ($8::jsonb is null or e.labels @> $8)
    and ($9::text[] is null or e.ref = any($9))
    and ($10::text is null or e.search @@ to_tsquery('english', $10))
"""

BY_REFS: Final = f"select {COLUMNS} from entities e where e.ref = any($1::text[])"

RELATIONS_BY_KEYS: Final = """
select distinct r.source_ref, r.type, r.target_ref
from relations r
join unnest($1::text[], $2::text[]) as k(ref, type) on r.source_ref = k.ref and r.type = k.type
order by r.source_ref, r.type, r.target_ref
"""

RELATIONS_OF_REFS: Final = """
select distinct source_ref, type, target_ref
from relations
where source_ref = any($1::text[])
order by source_ref, type, target_ref
"""

COUNT: Final = f"select count(*) from entities e where {WHERE}"
COUNT_BY_KINDS: Final = """
select coalesce(sum(count), 0) from facet_counts
where field = 'kind' and ($1::text[] is null or kind = any($1))
"""

FACETS: Final = {
    field: f"""
    select e.{column} as value, count(*) as count from entities e
    where {WHERE} and e.{column} is not null
    group by 1 order by 2 desc, 1 limit $11
    """
    for field, column in _FACET_COLUMNS.items()
} | {
    FacetField.TAG: f"""
    select t.value, count(*) as count from entities e cross join unnest(e.tags) as t(value)
    where {WHERE}
    group by 1 order by 2 desc, 1 limit $11
    """
}

FACETS_BY_KINDS: Final = """
select value, sum(count)::bigint as count from facet_counts
where field = $1 and ($2::text[] is null or kind = any($2))
group by value order by 2 desc, 1 limit $3
"""

_QUERY_WORD: Final = re.compile(r"[^\W_]+")
MAX_QUERY_WORDS: Final = 8


async def entities_by_refs(db: Executor, refs: list[str]) -> dict[str, EntityRecord]:
    return {r["ref"]: EntityRecord.from_row(r) for r in await db.fetch(BY_REFS, refs)}


async def relations_of(
    db: Executor, keys: list[tuple[str, str]]
) -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    rows = await db.fetch(RELATIONS_BY_KEYS, [k[0] for k in keys], [k[1] for k in keys])
    for row in rows:
        found.setdefault((row["source_ref"], row["type"]), []).append(row["target_ref"])
    return found


async def all_relations_of(db: Executor, refs: list[str]) -> dict[str, dict[str, list[str]]]:
    """Every relation of each ref, by type; an empty dict for a ref with none."""
    found: dict[str, dict[str, list[str]]] = {ref: {} for ref in refs}
    for row in await db.fetch(RELATIONS_OF_REFS, refs):
        found[row["source_ref"]].setdefault(row["type"], []).append(row["target_ref"])
    return found


async def prepare_search(db: Executor, text: str) -> SearchQuery:
    """Turn free text into a tsquery: each word as a prefix, or'ed with its spelling fixes.

    Only letters and digits reach the tsquery, so no input can inject tsquery syntax.
    """
    query_words = [w.lower() for w in _QUERY_WORD.findall(text)][:MAX_QUERY_WORDS]
    if not query_words:
        return SearchQuery(text, None)
    fixes = await corrections(db, query_words)
    groups = []
    for word in query_words:
        alternatives = [f"{word}:*", *(t for t in fixes.get(word, []) if t != word)]
        groups.append("(" + " | ".join(alternatives) + ")")
    return SearchQuery(text, " & ".join(groups))


async def count_entities(db: Executor, where: EntityFilter, search: SearchQuery | None) -> int:
    if search is not None and search.tsquery is None:
        return 0
    if search is None and where.kinds_only:
        return int(await db.fetchval(COUNT_BY_KINDS, where.kinds))
    return int(await db.fetchval(COUNT, *where.params(), search.tsquery if search else None))


async def facet_counts(
    db: Executor, field: FacetField, where: EntityFilter, search: SearchQuery | None, limit: int
) -> list[tuple[str, int]]:
    if search is not None and search.tsquery is None:
        return []
    if search is None and where.kinds_only:
        rows = await db.fetch(FACETS_BY_KINDS, field.value, where.kinds, limit)
        return [(r["value"], r["count"]) for r in rows]
    rows = await db.fetch(FACETS[field], *where.params(), search.tsquery if search else None, limit)
    return [(r["value"], r["count"]) for r in rows]


REFS_OWNED_BY: Final = "select ref from entities where owner_ref = any($1::text[]) order by ref"


async def refs_owned_by(db: Executor, owners: list[str]) -> list[str]:
    return [r["ref"] for r in await db.fetch(REFS_OWNED_BY, owners)]


# Components first: what most questions about a team's entities are about, when a cap cuts.
FIRST_REFS_OWNED_BY: Final = """
select ref from entities where owner_ref = any($1::text[])
order by kind <> 'Component', ref limit $2
"""


async def first_refs_owned_by(db: Executor, owners: list[str], limit: int) -> list[str]:
    """At most ``limit`` refs of what ``owners`` own: components, then the rest, by ref."""
    return [r["ref"] for r in await db.fetch(FIRST_REFS_OWNED_BY, owners, limit)]


async def refs_with_annotation(
    db: Executor, key: str, value: str, *, kind: str | None = None
) -> list[str]:
    """Refs of entities whose annotation ``key`` is ``value`` as written or in lowercase (the
    GIN index on annotations answers both containments)."""
    rows = await db.fetch(
        "select ref from entities where (annotations @> $1::jsonb or annotations @> $2::jsonb)"
        " and ($3::text is null or kind = $3) order by ref",
        {key: value},
        {key: value.lower()},
        kind,
    )
    return [row["ref"] for row in rows]
