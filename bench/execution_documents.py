"""The documents of the execution scenario (``bench.execution``): the component page of the
serving scenario, the console's ``TeamPage`` (a little more of each row) and its
``CatalogList``, each with the check its answers must pass."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from bench.harness import BenchFailure
from bench.harness.inprocess import Check
from bench.scenarios import COMPONENT_PAGE, pick_inputs, scenarios

if TYPE_CHECKING:
    from graph.services import Services

__all__ = ["CATALOG_LIST", "TEAM_PAGE", "Document", "documents"]

# The console's TeamPage, its owned rows the team's components with their owner and system.
TEAM_PAGE: Final = """
query TeamPage($ref: String!, $first: Int! = 50) {
  entity(ref: $ref) {
    id ref kind namespace name title description tags
    links { url title icon type }
    ... on Group {
      type
      profile { displayName email picture }
      parent { id ref name title }
      children { id ref name title }
      members { id ref kind namespace name title profile { displayName email picture } }
    }
  }
  owned: entitiesOwnedBy(
    ref: $ref, transitive: true, filter: {kind: ["component"]}, first: $first
  ) {
    totalCount
    nodes {
      id ref kind namespace name title description
      ... on Component {
        type lifecycle ownerRef
        owner { ref kind name title }
        system { ref name title }
      }
    }
  }
}
"""

# The console's CatalogList, as its catalog page asks for components.
CATALOG_LIST: Final = """
query CatalogList($filter: EntityFilter, $search: String, $first: Int!, $after: String) {
  entities(filter: $filter, search: $search, first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes { id ref kind namespace name title description tags }
  }
}
"""


@dataclass(frozen=True, slots=True)
class Document:
    name: str
    query: str
    operation_name: str
    variables: dict[str, Any]
    check: Check  # problems with an answer's data; empty when it is right


async def documents(services: Services) -> list[Document]:
    inputs = await pick_inputs(services.database)
    component = inputs.component
    page = scenarios(inputs)[0]  # the entity page: its check holds for the component page
    # The team of the component page: the group that owns the component.
    owner = await services.database.fetchval(
        "select owner_ref from entities where ref = $1", component
    )
    if owner is None or not str(owner).startswith("group:"):
        raise BenchFailure(f"execution: {component} has no owning group (owner {owner!r})")
    return [
        Document("component page", COMPONENT_PAGE, "ComponentPage", {"ref": component}, page.check),
        Document("team page", TEAM_PAGE, "TeamPage", {"ref": owner, "first": 50}, _team_page),
        Document(
            "catalog list, 50 rows",
            CATALOG_LIST,
            "CatalogList",
            {"filter": {"kind": ["component"]}, "first": 50},
            _catalog_list,
        ),
    ]


def _team_page(data: dict[str, Any]) -> list[str]:
    team = data.get("entity") or {}
    owned = (data.get("owned") or {}).get("nodes") or []
    problems = [] if team.get("members") else ["the team has no members"]
    if not owned:
        problems.append("the team owns nothing")
    if any(not node.get("owner") for node in owned):
        problems.append("an owned component has no owner")
    return problems


def _catalog_list(data: dict[str, Any]) -> list[str]:
    page = data.get("entities") or {}
    nodes = page.get("nodes") or []
    if len(nodes) != 50 or any(node.get("kind") != "Component" for node in nodes):
        return [f"{len(nodes)} nodes, expected 50 components"]
    return []
