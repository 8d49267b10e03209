"""Every relation of an entity by ref, without GraphQL: one statement per batch, the cache
entries the related-refs loader reads too, and each request's answers its own."""

from __future__ import annotations

import asyncio

from loaders.cache import Caches
from loaders.catalog import related_refs_loader, relations_by_ref_loader
from loaders.registry import LoaderServices
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from sources.db import Database

DOCS = "\n---\n".join(
    f"apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata: {{name: c{i}}}\n"
    f"spec: {{type: service, lifecycle: production, owner: team-{i % 3}, "
    f"dependsOn: [component:c{(i + 1) % 20}]}}"
    for i in range(20)
)


async def test_relations_by_ref_in_one_statement_and_from_the_shared_cache(db: Database) -> None:
    assert not (await apply_batch(db, parse_documents(DOCS, "c.yaml"))).errors
    caches = Caches(redis=None, prefix="t", max_entries=1000, max_bytes=1 << 20, ttl=60)
    refs = [f"component:default/c{i}" for i in range(20)]

    loader = relations_by_ref_loader(LoaderServices(db, {}, caches))
    before = db.queries
    found = await asyncio.gather(*(loader.load(ref) for ref in [*refs, "component:default/x"]))
    assert db.queries == before + 1
    assert found[0] == {
        "dependencyOf": ["component:default/c19"],
        "dependsOn": ["component:default/c1"],
        "ownedBy": ["group:default/team-0"],
    }
    assert found[-1] == {}, "no such entity: no relations"

    # Another request: the same entries, for either loader, and no statement.
    tags: set[str] = set()
    services = LoaderServices(db, {}, caches, tags)
    again = await relations_by_ref_loader(services).load(refs[0])
    owners = await related_refs_loader(services).load((refs[5], "ownedBy"))
    assert again == found[0] and owners == ["group:default/team-2"]
    assert db.queries == before + 1
    assert {refs[0], refs[5]} <= tags, "what was read is named for the response cache"
    # Changing one request's answer leaves the cache's alone.
    again["dependsOn"].append("component:default/mine")
    third = await relations_by_ref_loader(LoaderServices(db, {}, caches)).load(refs[0])
    assert third == found[0]
