"""Component.onCall: who is on call now, from the rotations file, batched."""

from __future__ import annotations

from typing import Any

from conftest import HANDOVER

ON_CALL = """
query ($ref: String!) {
  entity(ref: $ref) {
    ... on Component {
      onCall {
        id rotation teamRef primaryRef secondaryRef until escalationPolicy
        primary { ref title }
        secondary { ref }
        override { by }
      }
    }
  }
}
"""

TEAM = """
query ($owner: String!) {
  entities(filter: {kind: ["Component"], owner: [$owner]}, first: 50) {
    edges { node { ref ... on Component {
      onCall { primaryRef until primary { ref title } secondary { ref title } }
    } } }
  }
}
"""


async def test_on_call_is_the_owners_rotation_now(oncall: Any) -> None:
    answer = await oncall.gql(ON_CALL, {"ref": "component:small-svc-03"})
    assert answer["data"]["entity"]["onCall"] == {
        "id": "oncall:component:default/small-svc-03",
        "rotation": "Small primary",
        "teamRef": "group:default/small",
        # The second shift: the second person, the third after them.
        "primaryRef": "user:default/small-bob",
        "secondaryRef": "user:default/small-cat",
        "until": HANDOVER.isoformat(),
        "escalationPolicy": "Page the primary, then the secondary after 10 minutes.",
        "primary": {"ref": "user:default/small-bob", "title": "Small-Bob"},
        "secondary": {"ref": "user:default/small-cat"},
        "override": None,
    }


async def test_no_rotation_for_the_owner_is_null(oncall: Any) -> None:
    answer = await oncall.gql(ON_CALL, {"ref": "component:quiet-svc-00"})
    assert answer["data"]["entity"]["onCall"] is None


async def test_ten_or_fifty_components_take_the_same_statements(oncall: Any) -> None:
    counts = {}
    for team, size in (("small", 10), ("large", 50)):
        with oncall.statements() as statements:
            answer = await oncall.gql(TEAM, {"owner": f"group:default/{team}"})
        edges = answer["data"]["entities"]["edges"]
        assert len(edges) == size
        assert {e["node"]["onCall"]["primaryRef"] for e in edges} == {f"user:default/{team}-bob"}
        assert all(
            e["node"]["onCall"]["secondary"]["title"] == f"{team.title()}-Cat" for e in edges
        )
        counts[team] = statements.count
    assert counts["small"] == counts["large"], counts
    # The components, the owner set, the overrides, the people: a few, however many components.
    assert 0 < counts["large"] <= 4, counts
