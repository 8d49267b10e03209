"""Writing entities: one transaction per batch, and nothing written for what did not change."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from sources.catalog.documents import DocumentError, ParsedBatch, UnavailableField
from sources.catalog.model import Entity
from sources.catalog.vocabulary import record_terms
from sources.db import Database, Executor
from sources.errors import CatalogError

__all__ = ["ApplyResult", "DeletionGuard", "apply_batch", "delete_entity"]


@dataclass(slots=True)
class ApplyResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    errors: list[DocumentError] = field(default_factory=list)
    # Fields of the entities written that were stored empty: their placeholder was unreadable.
    unavailable: list[UnavailableField] = field(default_factory=list)
    # Entities at the other end of relations the changed ones gained or lost: their reverse
    # relations (dependents, members, owned entities) changed with them.
    related: set[str] = field(default_factory=set)

    @property
    def changed(self) -> list[str]:
        return self.created + self.updated + self.deleted

    @property
    def affected(self) -> list[str]:
        """Every ref whose answers may read differently now: what caches must drop."""
        changed = self.changed
        return changed + sorted(self.related.difference(changed))


_EXISTING = """
select ref, hash, origin, managed_by from entities where ref = any($1::text[])
order by ref for update
"""
# One statement for the whole batch: the facet-count triggers then fire once, not per entity.
# JSON columns travel as text (an array of lists would be taken for a multi-dimensional array),
# tags too, since unnest() cannot take an array of arrays of different lengths.
_UPSERT = """
insert into entities (
    ref, kind, namespace, name, title, description, spec_type, lifecycle, owner_ref, system_ref,
    tags, labels, annotations, links, spec, unavailable, hash, origin, managed_by
)
select
    ref, kind, namespace, name, title, description, spec_type, lifecycle, owner_ref, system_ref,
    array(select jsonb_array_elements_text(tags::jsonb)), labels::jsonb, annotations::jsonb,
    links::jsonb, spec::jsonb, unavailable::jsonb, hash, origin, $19
from unnest(
    $1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
    $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
    $15::text[], $16::text[], $17::text[], $18::text[]
) as x(
    ref, kind, namespace, name, title, description, spec_type, lifecycle, owner_ref, system_ref,
    tags, labels, annotations, links, spec, unavailable, hash, origin
)
on conflict (ref) do update set
    kind = excluded.kind, namespace = excluded.namespace, name = excluded.name,
    title = excluded.title, description = excluded.description,
    spec_type = excluded.spec_type, lifecycle = excluded.lifecycle,
    owner_ref = excluded.owner_ref, system_ref = excluded.system_ref, tags = excluded.tags,
    labels = excluded.labels, annotations = excluded.annotations, links = excluded.links,
    spec = excluded.spec, unavailable = excluded.unavailable, hash = excluded.hash,
    origin = excluded.origin, managed_by = excluded.managed_by, updated_at = now()
"""
_DROP_RELATIONS = """
delete from relations where origin_ref = any($1::text[]) returning source_ref, target_ref
"""
_ADD_RELATIONS = """
insert into relations (source_ref, type, target_ref, origin_ref)
select * from unnest($1::text[], $2::text[], $3::text[], $4::text[])
on conflict do nothing
"""
_ORPHANS = """
select ref, kind from entities
where origin = any($1::text[]) and ref <> all($2::text[]) and managed_by = $3
order by ref for update
"""
_DELETE = "delete from entities where ref = any($1::text[])"
# Batches replacing the same origin (two applies of one location, two imports of one file) take
# turns: each would delete what the other writes, and locking each other's rows as orphans
# deadlocked them. Locks in one order (of their keys), held to the end of the transaction.
_ORIGIN_LOCKS = """
select pg_advisory_xact_lock(key) from (
    select distinct hashtextextended(origin, 0) as key from unnest($1::text[]) as origin
    order by 1
) as keys
"""

# Called with the transaction and the (ref, kind) pairs about to be deleted; raising stops the
# whole batch before anything is written.
DeletionGuard = Callable[[Executor, list[tuple[str, str]]], Awaitable[None]]


async def apply_batch(
    db: Database,
    batch: ParsedBatch,
    *,
    managed_by: str = "catalog",
    replaces: frozenset[str] = frozenset(),
    guard: DeletionGuard | None = None,
) -> ApplyResult:
    """Store a parsed batch in one transaction.

    Documents that failed validation are already in ``batch.errors`` and are skipped; an entity
    that collides with another (the same ref twice, or a ref another manager owns) joins them.
    Entities an origin held before and no longer does are deleted, but only for origins read
    whole: a file with a broken document keeps everything it had. Entities of another manager
    are left alone unless that manager is in ``replaces`` (the directory takes over people a
    catalog file described).
    """
    result = ApplyResult(errors=list(batch.errors))
    incoming: dict[str, tuple[str, Entity]] = {}
    for origin, entity in batch.entities:
        if entity.ref in incoming:
            result.errors.append(
                DocumentError(
                    origin,
                    None,
                    "metadata.name",
                    f"{entity.ref} is defined twice; the first one, "
                    f"from {incoming[entity.ref][0]}, wins",
                )
            )
            continue
        incoming[entity.ref] = (origin, entity)

    complete = sorted(batch.complete_origins)
    async with db.transaction() as tx:
        if complete:
            await tx.execute(_ORIGIN_LOCKS, complete)
        existing = {r["ref"]: r for r in await tx.fetch(_EXISTING, list(incoming))}
        to_write: list[tuple[str, Entity]] = []
        for ref, (origin, entity) in incoming.items():
            row = existing.get(ref)
            if row is not None and row["managed_by"] not in (managed_by, *replaces):
                result.errors.append(
                    DocumentError(
                        origin,
                        None,
                        "metadata.name",
                        f"{ref} is managed by {row['managed_by']} and cannot be changed here",
                    )
                )
            elif (
                row is not None
                and row["hash"] == entity.hash
                and row["origin"] == origin
                and not entity.unavailable
            ):
                result.unchanged.append(ref)
            else:
                (result.updated if row is not None else result.created).append(ref)
                to_write.append((origin, entity))

        doomed: list[tuple[str, str]] = []
        if complete:
            rows = await tx.fetch(_ORPHANS, complete, list(incoming), managed_by)
            doomed = [(r["ref"], r["kind"]) for r in rows]
        if guard is not None:
            await guard(tx, doomed)
        if to_write:
            result.related |= await _write(tx, to_write, managed_by)
            written = {(origin, entity.ref) for origin, entity in to_write}
            result.unavailable = [u for u in batch.unavailable if (u.location, u.ref) in written]
        if doomed:
            deleted = [ref for ref, _ in doomed]
            await tx.execute(_DELETE, deleted)
            result.related |= _ends(await tx.fetch(_DROP_RELATIONS, deleted))
            result.deleted = deleted
    return result


def _ends(rows: list[Any]) -> set[str]:
    return {ref for row in rows for ref in (row["source_ref"], row["target_ref"])}


async def _write(tx: Executor, items: list[tuple[str, Entity]], managed_by: str) -> set[str]:
    """Upsert entities and their relations; returns the refs at both ends of every relation
    dropped or added.

    Rows go in sorted order (entities by ref, relations by key; the facet counts' triggers
    sort theirs too): imports running at the same time that share rows then lock them in the
    same order, and wait for each other instead of deadlocking."""
    items = sorted(items, key=lambda item: item[1].ref)
    entities = [e for _, e in items]
    text_columns = (
        "ref",
        "kind",
        "namespace",
        "name",
        "title",
        "description",
        "spec_type",
        "lifecycle",
        "owner_ref",
        "system_ref",
    )
    json_columns = ("tags", "labels", "annotations", "links", "spec", "unavailable")
    await tx.execute(
        _UPSERT,
        *([getattr(e, column) for e in entities] for column in text_columns),
        *([orjson.dumps(getattr(e, column)).decode() for e in entities] for column in json_columns),
        [e.hash for e in entities],
        [origin for origin, _ in items],
        managed_by,
    )
    refs = [e.ref for _, e in items]
    ends = _ends(await tx.fetch(_DROP_RELATIONS, refs))
    relations = sorted(
        ((r, e.ref) for _, e in items for r in e.relations),
        key=lambda pair: (pair[0].source_ref, pair[0].type, pair[0].target_ref),
    )
    ends.update(ref for r, _ in relations for ref in (r.source_ref, r.target_ref))
    if relations:
        await tx.execute(
            _ADD_RELATIONS,
            [r.source_ref for r, _ in relations],
            [r.type for r, _ in relations],
            [r.target_ref for r, _ in relations],
            [origin for _, origin in relations],
        )
    await record_terms(tx, (text for _, e in items for text in (e.name, e.title)))
    return ends


_DELETE_ONE = "delete from entities where ref = $1 and managed_by = 'catalog' returning ref"
_MANAGER = "select managed_by from entities where ref = $1"


async def delete_entity(db: Database, ref: str) -> list[str]:
    """Unregister one catalog entity and the relations it declared. Relations other entities
    declare towards it stay, waiting for it to come back. Directory-managed entities refuse.
    Returns the refs whose answers changed (none when there was no such entity)."""
    async with db.transaction() as tx:
        manager = await tx.fetchval(_MANAGER, ref)
        if manager is None:
            return []
        if manager != "catalog":
            raise CatalogError(f"{ref} is managed by {manager}; remove it there")
        await tx.execute(_DELETE_ONE, ref)
        ends = _ends(await tx.fetch(_DROP_RELATIONS, [ref]))
        return [ref, *sorted(ends - {ref})]
