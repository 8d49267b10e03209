"""The stars loader without GraphQL: one statement per batch, answers in key order; and what a
change of someone's stars drops from the response cache."""

from __future__ import annotations

import asyncio

from loaders.change_keys import tags_changed_by
from loaders.registry import LoaderServices
from loaders.stars import starred_loader, stars_tag
from sources.catalog.stars import add_star, remove_star
from sources.db import Database


async def test_a_batch_of_any_size_is_one_statement_in_key_order(db: Database) -> None:
    ada, bob = "user:default/ada", "user:default/bob"
    refs = [f"component:default/c{i:02d}" for i in range(50)]
    for ref in refs[::7]:
        assert await add_star(db, ada, ref)
    assert not await add_star(db, ada, refs[0]), "starred already"
    assert await add_star(db, bob, refs[1])
    assert await remove_star(db, ada, refs[7])
    assert not await remove_star(db, ada, refs[7]), "not starred any more"

    loader = starred_loader(LoaderServices(db, {}))
    keys = [(user, ref) for ref in refs for user in (ada, bob)]
    before = db.queries
    found = await asyncio.gather(*(loader.load(key) for key in keys))
    assert db.queries == before + 1
    expected = {(ada, ref) for ref in refs[::7] if ref != refs[7]} | {(bob, refs[1])}
    assert [key for key, yes in zip(keys, found, strict=True) if yes] == [
        key for key in keys if key in expected
    ]
    # A request asks once per key.
    assert await loader.load((ada, refs[0])) is True and db.queries == before + 1


def test_a_change_of_stars_drops_that_persons_answers_only() -> None:
    assert tags_changed_by([stars_tag("user:default/ada")]) == {"stars:user:default/ada"}
    # Entity refs still drop their kind's lists and the catalog's.
    assert tags_changed_by(["component:default/cart"]) == {
        "component:default/cart",
        "kind:component",
        "catalog",
    }
