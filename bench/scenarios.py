"""The four things people do in a developer portal, as the GraphQL requests its UI sends.

Inputs are picked from the loaded data, not hard-coded, so each scenario asks for something
that exists and is typical (a component with dependents and APIs; the team with the most
components; a word many names share and a misspelling of it). Every response is checked:
a fast wrong answer, or an error, must fail the run, not flatter it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from bench.harness.inprocess import Check, Scenario, page_problems
from sources.db import Database

__all__ = ["COMPONENT_PAGE", "ENTITY_PAGE", "Inputs", "pick_inputs", "scenarios"]

SEARCH_WORD: Final = "checkout"
SEARCH_TYPO: Final = "chekout"  # one letter dropped: trigram similarity 0.55 with the word

ENTITY_PAGE: Final = """
query EntityPage($ref: String!) {
  entity(ref: $ref) {
    ref kind namespace name title description tags labels annotations
    links { url title icon type }
    ... on Component {
      type lifecycle
      owner {
        ref kind name title
        ... on Group { profile { displayName email picture } }
        ... on User { profile { displayName email picture } }
      }
      system { ref name title domain { ref name title } }
      dependencies { ref kind name title }
      dependents { ref kind name title }
      providesApis { ref name title type lifecycle }
      consumesApis { ref name title type lifecycle }
    }
  }
}
"""

# The entity page as a console shows it: each related entity with its
# description, lifecycle and owner, and the owning team's members.
COMPONENT_PAGE: Final = """
query ComponentPage($ref: String!) {
  entity(ref: $ref) {
    ref kind namespace name title description tags labels annotations
    links { url title icon type }
    ... on Component {
      type lifecycle
      owner {
        ref kind name title description
        ... on Group {
          profile { displayName email picture }
          members { ref name title profile { displayName email picture } }
        }
        ... on User { profile { displayName email picture } }
      }
      system { ref name title description domain { ref name title description } }
      dependencies { ...Related }
      dependents { ...Related }
      providesApis { ref name title description type lifecycle ownerRef }
      consumesApis { ref name title description type lifecycle ownerRef }
    }
  }
}

fragment Related on Entity {
  ref kind name title description tags
  ... on Component { type lifecycle ownerRef }
  ... on Resource { type ownerRef }
}
"""

FILTERED_LIST: Final = """
query OwnedComponents($owner: String!) {
  entities(filter: {kind: ["component"], owner: [$owner]}, first: 50) {
    totalCount
    nodes { ref name title ... on Component { owner { ref } } }
  }
}
"""

# The console's table of production components sorted by owner, descending: a page read as a
# range of the (kind, owner, ref) index, under a filter on another column.
SORTED_LIST: Final = """
query SortedComponents {
  entities(
    filter: {kind: ["component"], lifecycle: ["production"]}
    orderBy: OWNER_DESC
    first: 50
  ) {
    totalCount
    nodes { ref name title ... on Component { ownerRef lifecycle owner { ref } } }
  }
}
"""

# Several kinds sorted by a key some of them never have (users have no system): each kind is
# read from its own index range and the ranges merged.
SORTED_KINDS: Final = """
query SortedBySystem {
  entities(filter: {kind: ["user", "resource", "api"]}, orderBy: SYSTEM_ASC, first: 50) {
    totalCount
    nodes { ref kind name ... on Resource { system { ref } } ... on API { system { ref } } }
  }
}
"""

SEARCH: Final = """
query Search($text: String!) {
  entities(search: $text, first: 20) {
    totalCount
    nodes { ref kind name title }
  }
}
"""

FACETS: Final = """
query Facets {
  kinds: facets(field: KIND) { value count }
  tags: facets(field: TAG, filter: {kind: ["component"]}) { value count }
}
"""

# A component with everything the page shows, and an ordinary number of dependents (a hub
# with thousands would measure the hub, not the page).
_TYPICAL_COMPONENT = """
select e.ref from entities e
where e.kind = 'Component'
  and exists (select 1 from relations r where r.source_ref = e.ref and r.type = 'providesApi')
  and exists (select 1 from relations r where r.source_ref = e.ref and r.type = 'consumesApi')
  and exists (select 1 from relations r where r.source_ref = e.ref and r.type = 'dependsOn'
              and r.target_ref like 'component:%')
  and (select count(*) from relations r
       where r.source_ref = e.ref and r.type = 'dependencyOf') between 2 and 10
order by e.ref
limit 1
"""
_PRODUCTION_COMPONENTS = """
select count(*) from entities where kind = 'Component' and lifecycle = 'production'
"""
_USERS_RESOURCES_APIS = """
select count(*) from entities where kind in ('User', 'Resource', 'API')
"""
_BIGGEST_OWNER = """
select owner_ref, count(*) as count from entities
where kind = 'Component' and owner_ref is not null
group by owner_ref order by count desc, owner_ref limit 1
"""


@dataclass(frozen=True, slots=True)
class Inputs:
    component: str
    owner: str
    owner_components: int
    production_components: int
    users_resources_apis: int


async def pick_inputs(db: Database) -> Inputs:
    component = await db.fetchval(_TYPICAL_COMPONENT)
    owner = await db.fetchrow(_BIGGEST_OWNER)
    if component is None or owner is None:
        raise LookupError("the generated catalog has no typical component or no owner")
    return Inputs(
        component,
        owner["owner_ref"],
        owner["count"],
        await db.fetchval(_PRODUCTION_COMPONENTS),
        await db.fetchval(_USERS_RESOURCES_APIS),
    )


def _entity_page(data: dict[str, Any]) -> list[str]:
    entity = data.get("entity")
    if not entity:
        return ["entity is null"]
    problems = [f"{key} is empty" for key in ("owner", "system") if not entity.get(key)]
    if entity.get("system") and not entity["system"].get("domain"):
        problems.append("system.domain is null")
    problems += [
        f"{key} is empty"
        for key in ("dependencies", "dependents", "providesApis", "consumesApis", "tags", "links")
        if not entity.get(key)
    ]
    return problems


def _filtered_list(expected: int) -> Check:
    def check(data: dict[str, Any]) -> list[str]:
        nodes, problems = page_problems(data.get("entities"), expected, 50)
        owners = {(n.get("owner") or {}).get("ref") for n in nodes}
        if len(owners) > 1:
            problems.append(f"nodes have several owners: {sorted(map(str, owners))[:3]}")
        return problems

    return check


def _sorted(expected: int, key: Callable[[dict[str, Any]], Any], descending: bool) -> Check:
    """A full page of ``expected`` matches, in order of ``key``'s value (missing ones last)."""

    def check(data: dict[str, Any]) -> list[str]:
        nodes, problems = page_problems(data.get("entities"), expected, 50)
        keys = [key(n) for n in nodes]
        present = [k for k in keys if k is not None]
        if keys[: len(present)] != present or present != sorted(present, reverse=descending):
            problems.append(f"not in order: {keys[:5]}...")
        return problems

    return check


def _owner_ref(node: dict[str, Any]) -> Any:
    return node.get("ownerRef")


def _system_ref(node: dict[str, Any]) -> Any:
    return (node.get("system") or {}).get("ref")


def _search(data: dict[str, Any]) -> list[str]:
    page = data.get("entities") or {}
    if not page.get("totalCount") or not page.get("nodes"):
        return [f"no results (totalCount {page.get('totalCount')})"]
    return []


def _facets(data: dict[str, Any]) -> list[str]:
    return [f"{key} is empty" for key in ("kinds", "tags") if not data.get(key)]


# The server's time, uncached (no response cache, no loader cache), held at p50 and p99.
ENTITY_PAGE_MS: Final = 10
LIST_MS: Final = 15  # a page of 50 rows
SEARCH_MS: Final = 50
FACETS_MS: Final = 20


def scenarios(inputs: Inputs) -> list[Scenario]:
    return [
        Scenario(
            "entity page", ENTITY_PAGE_MS, ENTITY_PAGE, {"ref": inputs.component}, _entity_page
        ),
        Scenario(
            "filtered list",
            LIST_MS,
            FILTERED_LIST,
            {"owner": inputs.owner},
            _filtered_list(inputs.owner_components),
        ),
        Scenario(
            "sorted list",
            LIST_MS,
            SORTED_LIST,
            {},
            _sorted(inputs.production_components, _owner_ref, descending=True),
        ),
        Scenario(
            "several kinds sorted",
            LIST_MS,
            SORTED_KINDS,
            {},
            _sorted(inputs.users_resources_apis, _system_ref, descending=False),
        ),
        Scenario(f"search {SEARCH_WORD!r}", SEARCH_MS, SEARCH, {"text": SEARCH_WORD}, _search),
        Scenario(f"search {SEARCH_TYPO!r}", SEARCH_MS, SEARCH, {"text": SEARCH_TYPO}, _search),
        Scenario("facets", FACETS_MS, FACETS, {}, _facets),
    ]
