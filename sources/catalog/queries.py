"""Reading the catalog: entities by ref, relations, the filter and search of lists, facets."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, Final

import asyncpg

from sources.catalog.refs import KINDS
from sources.catalog.vocabulary import corrections
from sources.db import Executor

__all__ = [
    "COLUMNS",
    "NOTHING",
    "WHERE",
    "EntityFilter",
    "EntityRecord",
    "FacetField",
    "SearchQuery",
    "Where",
    "count_entities",
    "count_sql",
    "entities_by_refs",
    "facet_counts",
    "facet_sql",
    "first_refs_owned_by",
    "prepare_search",
    "ref_of_id",
    "refs_matching",
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
    # Not part of the record: what a layer above built from it once (the graph's entity
    # object), kept with the record so that it lives as long as the record is cached and no
    # longer. Set once with ``keep``; ``dataclasses.replace`` leaves it behind.
    built: Any = field(default=None, init=False, compare=False, repr=False)

    def keep(self, built: Any) -> None:
        object.__setattr__(self, "built", built)

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> EntityRecord:
        return cls(*row[:18])


@dataclass(frozen=True, slots=True)
class Where:
    """A condition on the entity ``e`` with its parameters ($1..$n, in order): what lists,
    counts and facets read. ``kinds`` are the only kinds it can match (None: any);
    ``kinds_only`` says nothing but those kinds is asked, so the counts table can answer;
    ``counted`` is, when nothing but those kinds and the values of one field the counts table
    keeps is asked, that field and its values, so it can answer the total;
    ``rank`` is the parameter holding the search's tsquery, for ordering by relevance."""

    sql: str
    params: tuple[Any, ...]
    kinds: list[str] | None = None
    kinds_only: bool = False
    rank: str | None = None
    counted: tuple[str, list[str]] | None = None


# What a search with nothing searchable in it matches: asked of no database.
NOTHING: Final = Where("false", ())


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
    annotations: dict[str, str] | None = None
    refs: list[str] | None = None  # an empty list matches nothing

    @property
    def kinds_only(self) -> bool:
        """True when nothing but kinds is filtered: the precomputed counts can answer."""
        return self.params()[1:] == (None,) * 9

    @property
    def counted(self) -> tuple[str, list[str]] | None:
        """The counts table's field and the values asked of it, when the filter asks nothing
        but kinds and one such field: then the table's counts sum to the total exactly. An
        entity has one value of each field but tags, so any of several values of them, but
        only one tag (an entity's tags are distinct: it is counted once under each)."""
        fields = {
            "type": self.types,
            "owner": self.owners,
            "lifecycle": self.lifecycles,
            "system": self.systems,
            "namespace": self.namespaces,
            "tag": self.tags,
        }
        asked = [(field, values) for field, values in fields.items() if values is not None]
        others = (self.labels, self.annotations, self.refs)
        if len(asked) != 1 or any(value is not None for value in others):
            return None
        field, values = asked[0]
        if field == "tag" and len(set(values)) > 1:
            return None
        return field, list(dict.fromkeys(values))

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
            self.annotations,
            self.refs,
        )

    def where(self, search: SearchQuery | None) -> Where:
        """The filter and search as a condition (WHERE); a search with nothing searchable in
        it matches nothing."""
        if search is not None and search.tsquery is None:
            return NOTHING
        return Where(
            WHERE,
            (*self.params(), search.tsquery if search else None),
            kinds=self.kinds,
            kinds_only=search is None and self.kinds_only,
            rank="$11",
            counted=self.counted if search is None else None,
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


# $1..$10 are EntityFilter.params(); $11 a tsquery text or null. A single value of a column
# lists sort on is compared as an equality, not as a one-item array: the planner then takes
# that column as fixed and reads a sorted page from a range of an index that starts with it
# (it never matches "= any" to an index's order). Labels and annotations are containments the
# GIN indexes on those columns answer (migrations 0001 and 0005).
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
    and ($9::jsonb is null or e.annotations @> $9)
    and ($10::text[] is null or e.ref = any($10))
    and ($11::text is null or e.search @@ to_tsquery('english', $11))
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

COUNT_BY_KINDS: Final = """
select coalesce(sum(count), 0) from facet_counts
where field = 'kind' and ($1::text[] is null or kind = any($1))
"""

# The entities of some kinds with one of the values of one field: a look-up of the key for
# each kind and value.
COUNT_BY_FACET: Final = """
select coalesce(sum(count), 0) from facet_counts
where field = $1 and kind = any($2::text[]) and value = any($3::text[])
"""

_FACET_VALUES: Final = {
    FacetField.KIND: "select e.kind",
    FacetField.TYPE: "select e.spec_type",
    FacetField.OWNER: "select e.owner_ref",
    FacetField.LIFECYCLE: "select e.lifecycle",
    FacetField.NAMESPACE: "select e.namespace",
    FacetField.SYSTEM: "select e.system_ref",
    FacetField.TAG: "select unnest(e.tags)",
}

FACETS_BY_KINDS: Final = """
select value, sum(count)::bigint as count from facet_counts
where field = $1 and ($2::text[] is null or kind = any($2))
group by value order by 2 desc, 1 limit $3
"""


def count_sql(where: str) -> str:
    return f"select count(*) from entities e where {where}"


def facet_sql(values: str, where: str, limit: str) -> str:
    """Counts of the values ``values`` selects for each entity (a lateral query over ``e``)
    among the entities ``where`` matches, most frequent first."""
    return f"""
    select f.value, count(*) as count from entities e cross join lateral ({values}) as f(value)
    where {where} and f.value is not null
    group by 1 order by 2 desc, 1 limit {limit}
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


async def count_entities(db: Executor, where: Where) -> int:
    if where.sql == NOTHING.sql:
        return 0
    if where.kinds_only:
        return int(await db.fetchval(COUNT_BY_KINDS, where.kinds))
    if where.counted is not None:
        field, values = where.counted
        kinds = where.kinds if where.kinds is not None else list(KINDS)
        return int(await db.fetchval(COUNT_BY_FACET, field, kinds, values))
    return int(await db.fetchval(count_sql(where.sql), *where.params))


async def facet_counts(
    db: Executor, field: FacetField, where: Where, limit: int
) -> list[tuple[str, int]]:
    if where.sql == NOTHING.sql:
        return []
    if where.kinds_only:
        rows = await db.fetch(FACETS_BY_KINDS, field.value, where.kinds, limit)
    else:
        limit_param = f"${len(where.params) + 1}"
        sql = facet_sql(_FACET_VALUES[field], where.sql, limit_param)
        rows = await db.fetch(sql, *where.params, limit)
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


async def ref_of_id(db: Executor, entity_id: int) -> str | None:
    ref: str | None = await db.fetchval("select ref from entities where id = $1", entity_id)
    return ref


async def refs_matching(db: Executor, refs: list[str], where: Where) -> set[str]:
    """Which of ``refs`` name entities that ``where`` matches."""
    if where.sql == NOTHING.sql or not refs:
        return set()
    n = len(where.params)
    sql = f"select e.ref from entities e where e.ref = any(${n + 1}::text[]) and {where.sql}"
    return {row["ref"] for row in await db.fetch(sql, *where.params, refs)}
