"""Change keys: entity keys drop their kind's lists and the whole catalog's answers; a plugin's
own keys drop only what is tagged with them, whatever ``:`` and ``/`` they hold."""

from __future__ import annotations

import pytest

from graph.plugin import WHOLE_CATALOG, announce_changes, change_key, entity_key
from loaders.change_keys import entity_of_key, tags_changed_by
from plugins.deployments.store import changed_keys
from sources.errors import InvalidRef
from tests.conftest import AppFactory, Client
from tests.graph.test_response_cache import apply, component, hits

EVERY_ENTITY = "query Every { entities(first: 10) { edges { node { ref } } } }"
COMPONENTS = (
    'query Components { entities(filter: {kind: ["component"]}, first: 10) { totalCount } }'
)


def test_an_entity_key_is_the_normalized_ref() -> None:
    assert entity_key("Component:Checkout") == "component:default/checkout"
    assert entity_key("group:platform/Team-A") == "group:platform/team-a"
    with pytest.raises(InvalidRef):
        entity_key("widget:default/checkout")  # not a kind of the catalog


def test_an_entity_change_drops_its_kind_and_the_whole_catalog() -> None:
    key = entity_key("component:checkout")
    assert entity_of_key(key) == "component"
    assert tags_changed_by([key]) == {key, "kind:component", WHOLE_CATALOG}


def test_a_plugin_key_holding_colons_and_slashes_is_no_entity() -> None:
    keys = [
        change_key("oncall", "default/checkout"),  # a ':' then a '/', as an entity ref has
        change_key("oncall", "component:default/checkout", "rotation"),
        *changed_keys(["component:default/checkout"]),  # the deployments plugin's
    ]
    assert keys[0] == "oncall:default/checkout"
    assert keys[2] == "deploys:component:default/checkout"
    for key in keys:
        assert entity_of_key(key) is None, key
        assert tags_changed_by([key]) == {key}, key
    # Atrium's list tags are plain keys when announced.
    assert tags_changed_by(["kind:component", "catalog"]) == {"kind:component", "catalog"}


@pytest.mark.parametrize("namespace", ["component", "kind", "catalog", "stars", "On Call", ""])
def test_a_namespace_of_the_catalog_or_atrium_is_refused(namespace: str) -> None:
    with pytest.raises(ValueError, match="namespace"):
        change_key(namespace, "x")


async def _listed(client: Client) -> tuple[int, int]:
    every = await client.persisted_get(EVERY_ENTITY)
    components = await client.persisted_get(COMPONENTS)
    assert every.status_code == components.status_code == 200
    return (
        len(every.json()["data"]["entities"]["edges"]),
        components.json()["data"]["entities"]["totalCount"],
    )


async def test_plugin_keys_leave_whole_catalog_answers_in_every_replica(
    make_client: AppFactory, redis_url: str, cache_prefix: str
) -> None:
    a = await make_client(redis_url=redis_url, cache_prefix=cache_prefix)
    b = await make_client(redis_url=redis_url, cache_prefix=cache_prefix)
    await apply(a, component("checkout", "Checkout"))
    assert await _listed(a) == (1, 1)  # computed, kept in a's memory and in Redis
    before = hits(a)
    await announce_changes(
        a.services,
        [
            change_key("oncall", "default/checkout"),
            change_key("oncall", entity_key("component:checkout")),
            *changed_keys([entity_key("component:checkout")]),
        ],
    )
    assert await _listed(a) == (1, 1)
    assert hits(a) == before + 2, "both answers still in a's memory"
    assert await _listed(b) == (1, 1)
    assert hits(b, "response-l2") == 2, "and in Redis, for the other replica"

    # An entity's change drops them, as it always did.
    await announce_changes(a.services, [entity_key("Component:Checkout")])
    before = hits(a)
    await _listed(a)
    assert hits(a) == before, "both recomputed"
