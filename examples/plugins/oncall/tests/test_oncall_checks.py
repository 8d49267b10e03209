"""Atrium's checks over this plugin's own fields: hostile inputs never make a server error,
and answers on compiled plans equal the generic executor's."""

from __future__ import annotations

from typing import Any

from atrium.testing import check_hostile_inputs, check_plan_equivalence

QUERIES = [
    (
        """query OnCallOfOne($ref: String!) {
          entity(ref: $ref) { ... on Component { onCall {
            id rotation teamRef primaryRef secondaryRef until escalationPolicy viewerCanOverride
            primary { ref title } secondary { ref } override { by reason until at }
          } } }
        }""",
        {"ref": "component:default/small-svc-02"},
    ),
    (
        """query OnCallOfTeam($owner: String!) {
          entities(filter: {kind: ["Component"], owner: [$owner]}, first: 20) {
            edges { node { ref ... on Component { onCall { primaryRef until } } } }
          }
        }""",
        {"owner": "group:default/large"},
    ),
]


async def test_hostile_inputs_to_the_plugins_fields(oncall: Any) -> None:
    assert await check_hostile_inputs(oncall, "oncall") > 0


async def test_answers_on_plans_equal_the_generic_executors(oncall: Any) -> None:
    assert await check_plan_equivalence(oncall, QUERIES) >= len(QUERIES)
