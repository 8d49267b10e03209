"""Writing entities: one transaction per batch, and nothing written for what did not change."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

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


# A large batch is written a slice at a time, in one transaction: statements of bounded size
# (a million entities' JSON is more than a statement's parameters may hold) whose triggers
# each see a slice. Small batches are one slice, as they always were.
ENTITY_SLICE: Final = 5_000
RELATION_SLICE: Final = 50_000

# Read without a lock: an unchanged entity is not written, and locking it would write it all
# the same (a row lock is a mark in the row). The rows to be written are locked (in ref
# order) and read again under the lock before anything is decided about them.
_EXISTING = "select ref, hash, origin, managed_by from entities where ref = any($1::text[])"
_LOCKED = """
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
# The refs at either end of the relations dropped, each once.
_DROP_RELATIONS = """
with gone as (
    delete from relations where origin_ref = any($1::text[]) returning source_ref, target_ref
)
select source_ref as ref from gone union select target_ref from gone
"""
_ADD_RELATIONS = """
insert into relations (source_ref, type, target_ref, origin_ref)
select * from unnest($1::text[], $2::text[], $3::text[], $4::text[])
on conflict do nothing
"""
_ORPHANS = """
select ref, kind from entities
where origin = any($1::text[]) and not ref = any($2::text[]) and managed_by = $3
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
        existing = await _rows(tx, _EXISTING, list(incoming))
        changing = sorted(
            ref
            for ref, (origin, entity) in incoming.items()
            if ref in existing and not _unchanged(existing[ref], origin, entity)
        )
        locked = await _rows(tx, _LOCKED, changing)
        for ref in changing:  # as they are under the lock; gone if deleted meanwhile
            if ref in locked:
                existing[ref] = locked[ref]
            else:
                del existing[ref]
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
            elif row is not None and _unchanged(row, origin, entity):
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
            for start in range(0, len(deleted), ENTITY_SLICE):
                part = deleted[start : start + ENTITY_SLICE]
                await tx.execute(_DELETE, part)
                result.related |= _ends(await tx.fetch(_DROP_RELATIONS, part))
            result.deleted = deleted
    return result


def _unchanged(row: Any, origin: str, entity: Entity) -> bool:
    return bool(row["hash"] == entity.hash and row["origin"] == origin and not entity.unavailable)


async def _rows(tx: Executor, sql: str, refs: list[str]) -> dict[str, Any]:
    """The rows of ``refs`` that ``sql`` reads (given refs, in slices), by ref."""
    found: dict[str, Any] = {}
    for start in range(0, len(refs), RELATION_SLICE):
        for row in await tx.fetch(sql, refs[start : start + RELATION_SLICE]):
            found[row["ref"]] = row
    return found


def _ends(rows: list[Any]) -> set[str]:
    return {row["ref"] for row in rows}


async def _write(tx: Executor, items: list[tuple[str, Entity]], managed_by: str) -> set[str]:
    """Upsert entities and their relations; returns the refs at both ends of every relation
    dropped or added.

    Rows go in sorted order (entities by ref, relations by key; the facet counts' triggers
    sort theirs too), a slice at a time: imports running at the same time that share rows
    then lock them in the same order, and wait for each other instead of deadlocking."""
    items = sorted(items, key=lambda item: item[1].ref)
    for start in range(0, len(items), ENTITY_SLICE):
        await _upsert(tx, items[start : start + ENTITY_SLICE], managed_by)
    refs = [e.ref for _, e in items]
    ends: set[str] = set()
    for start in range(0, len(refs), ENTITY_SLICE):
        ends |= _ends(await tx.fetch(_DROP_RELATIONS, refs[start : start + ENTITY_SLICE]))
    relations = sorted(
        (r.source_ref, r.type, r.target_ref, e.ref) for _, e in items for r in e.relations
    )
    ends.update(ref for r in relations for ref in (r[0], r[2]))
    for start in range(0, len(relations), RELATION_SLICE):
        part = relations[start : start + RELATION_SLICE]
        await tx.execute(_ADD_RELATIONS, *(list(column) for column in zip(*part, strict=True)))
    await record_terms(tx, (text for _, e in items for text in (e.name, e.title)))
    return ends


_TEXT_COLUMNS: Final = (
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
_JSON_COLUMNS: Final = ("tags", "labels", "annotations", "links", "spec", "unavailable")


async def _upsert(tx: Executor, items: list[tuple[str, Entity]], managed_by: str) -> None:
    entities = [e for _, e in items]
    await tx.execute(
        _UPSERT,
        *([getattr(e, column) for e in entities] for column in _TEXT_COLUMNS),
        *(
            [orjson.dumps(getattr(e, column)).decode() for e in entities]
            for column in _JSON_COLUMNS
        ),
        [e.hash for e in entities],
        [origin for origin, _ in items],
        managed_by,
    )


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
