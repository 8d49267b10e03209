"""``check_plan_equivalence``: a document answers the same on its compiled plan as on the
generic executor (graph/plans/), and does run on a plan.

Each operation runs twice in process, each time on a fresh request context as the same
viewer: through graphql-core under Strawberry (the generic path), then through its compiled
plan. The two answers must be the same bytes once encoded as the HTTP view encodes them, with
the same cache policy and, when there are no errors, the same cache tags.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["Compared", "PlanDifferences", "check_plan_equivalence", "compare_on_plan", "viewer"]


class PlanDifferences(AssertionError):
    """Documents whose compiled plan answered otherwise than the generic executor, or that
    did not run on a plan at all; ``problems`` says which and how."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n\n".join(problems))


@dataclass(frozen=True, slots=True)
class Compared:
    """How one run went: ``on_plan`` when both ran and agreed; else ``why`` the plan did not
    run (the generic executor refused it first, no plan was built, or the plan declined)."""

    on_plan: bool
    why: str | None = None
    with_errors: bool = False


def viewer(user: str | None = None) -> Any:
    """The viewer of a request: nobody, or ``user`` (a name or a ``user:`` ref) as the trusted
    proxy names them."""
    from graph.plugin import Viewer, normalize_ref

    if user is None:
        return Viewer(None, "anonymous", frozenset({"read"}))
    return Viewer(normalize_ref(user, default_kind="user"), "proxy", frozenset({"read", "write"}))


async def compare_on_plan(
    services: Any,
    query: str,
    variables: dict[str, Any] | None,
    operation_name: str | None,
    as_viewer: Any,
) -> Compared:
    """Run one operation both ways; raises AssertionError with both answers when they differ."""
    from strawberry.types.execution import PreExecutionError
    from strawberry.types.graphql import OperationType

    from graph.http_input import JSON
    from graph.http_output import result_outcome

    plans = services.assembly.plans
    if plans is None:
        return Compared(False, f"compiled plans are off: {services.assembly.plans_off}")
    allowed = {OperationType.QUERY, OperationType.MUTATION}
    generic_context = await services.context(None, as_viewer)
    generic = await services.execute(
        query, variables, operation_name, allowed=allowed, context=generic_context
    )
    if isinstance(generic, PreExecutionError):
        return Compared(False, f"refused before running: {generic.errors}")
    plan = plans.learn(query, operation_name)
    if plan is None:  # left to the generic path (a literal the input guard refuses)
        return Compared(False, "no plan was built for it (not plannable)")
    compiled_context = await services.context(None, as_viewer)
    compiled = await plan.execute(compiled_context, variables)
    if compiled is None:  # refused before running (cost, unstorable input): generic answers
        return Compared(False, "its plan declined these variables")
    expected = result_outcome(generic, JSON, None).body
    got = result_outcome(compiled, JSON, None).body
    context = f"{operation_name or ''} as {as_viewer.actor} with {variables!r}:\n{query}"
    assert got == expected, (
        f"answers differ for {context}\ngeneric:  {expected!r}\ncompiled: {got!r}"
    )
    policies = [
        (c.cache.seconds, c.cache.private) if c.cache is not None else None
        for c in (generic_context, compiled_context)
    ]
    assert policies[0] == policies[1], f"cache policies differ for {context}: {policies}"
    # Tags say what a kept answer depends on; answers with errors are never kept, and which
    # loads a failure cut short before they ran is a matter of timing.
    if compiled.errors is None:
        assert generic_context.tags == compiled_context.tags, (
            f"cache tags differ for {context}: generic only "
            f"{generic_context.tags - compiled_context.tags}, compiled only "
            f"{compiled_context.tags - generic_context.tags}"
        )
    return Compared(True, with_errors=b'"errors"' in expected)


async def check_plan_equivalence(
    client: Any,
    queries: Iterable[str | tuple[str, dict[str, Any] | None]],
    *,
    as_user: str | None = None,
) -> int:
    """Each query (a document, or a (document, variables) pair; a document of several
    operations runs each) answers the same bytes, cache policy and tags on its compiled plan
    as on the generic executor, and did run on a plan. As nobody, or ``as_user``. Raises
    ``PlanDifferences`` naming every document that differs or did not run on a plan; returns
    the number of runs compared."""
    from graphql import OperationDefinitionNode, OperationType, parse

    services = client.services
    who = viewer(as_user)
    problems: list[str] = []
    compared = 0
    for item in queries:
        query, variables = (item, None) if isinstance(item, str) else item
        operations = [d for d in parse(query).definitions if isinstance(d, OperationDefinitionNode)]
        for operation in operations:
            if operation.operation is OperationType.SUBSCRIPTION:
                continue
            name = operation.name.value if operation.name else None
            try:
                outcome = await compare_on_plan(services, query, variables, name, who)
            except AssertionError as exc:
                problems.append(str(exc))
                continue
            if not outcome.on_plan:
                problems.append(f"did not run on a plan ({outcome.why}):\n{query}")
            else:
                compared += 1
    if problems:
        raise PlanDifferences(problems)
    if not compared:
        raise ValueError("no query to compare: give check_plan_equivalence some")
    return compared
