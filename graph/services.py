"""Everything the app holds between requests, built by ``create_app`` and the lifespan."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import HTTPConnection
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType

from graph.assembly import Assembly
from graph.auth.identity import Identity
from graph.auth.tokens import TokenCache
from graph.auth.viewer import resolve_viewer, viewer_of
from graph.context import Context
from graph.hot_answers import Hit, HotAnswers
from graph.http_input import GetOperations
from graph.logs import AccessLog
from graph.metrics import Metrics
from graph.persisted import PersistedQueries
from graph.provided import ChangeFeed, ServiceDirectory
from graph.settings import Settings
from loaders.cache import Caches
from loaders.registry import LoaderServices
from loaders.responses import ResponseCache
from sources.auth import Viewer
from sources.db import Database

__all__ = ["Services"]

# Why an operation ran on the generic executor (atrium_operation_runs): compiled plans are off
# (ATRIUM_COMPILED_PLANS, or a plugin's schema extension: `atrium plugins` says which); the
# document is not a persisted or trusted one; its first run (which plans it); it cannot be
# planned (a subscription, introspection, @defer...); or its plan declined these variables
# (they do not coerce, or a limit refuses them: the generic executor says why).
PLANS_OFF, NOT_PERSISTED, FIRST_RUN, NOT_PLANNABLE, DECLINED = (
    "plans_off",
    "not_persisted",
    "first_run",
    "not_plannable",
    "declined",
)


@dataclass(slots=True)
class Services:
    settings: Settings
    assembly: Assembly
    metrics: Metrics
    persisted: PersistedQueries
    db: Database | None = None  # set by the lifespan
    caches: Caches | None = None  # set by the lifespan
    responses: ResponseCache | None = None  # set by the lifespan unless turned off
    # Kept public answers the HTTP protocol sends itself (set by create_app unless turned off).
    hot: HotAnswers | None = None
    extras: dict[str, Any] = field(default_factory=dict)  # clients plugins add at start-up
    tokens: TokenCache = field(default_factory=TokenCache)
    access_log: AccessLog = field(default_factory=AccessLog)
    get_operations: GetOperations = field(default_factory=GetOperations)
    # The console's build (ssr.console.Console), loaded by the lifespan when there is one.
    console: Any = None
    vary: tuple[bytes, bytes] = (b"vary", b"Accept, Authorization")  # set by create_app
    provided: ServiceDirectory | None = None  # set by create_app
    changes: ChangeFeed = field(default_factory=ChangeFeed)
    # Sign-in's provider, sessions and bearer JWTs, connected by the lifespan when
    # oidc_issuer is set.
    identity: Identity | None = None
    # Set when the replica is stopping (atrium.drain): /readyz answers 503 so that balancers
    # take it out, and answers close their connections; it goes on serving meanwhile.
    draining: bool = False

    @property
    def database(self) -> Database:
        if self.db is None:
            raise RuntimeError("the app has not started: the database is not connected")
        return self.db

    async def viewer(self, request: HTTPConnection | None) -> Viewer:
        """Who is asking; a bad token raises NotAuthenticated."""
        return await resolve_viewer(
            request, self.settings, self.database, self.tokens, self.identity
        )

    async def viewer_of(self, headers: dict[bytes, bytes], client: str | None) -> Viewer:
        """Who is asking, from a request's headers and address; a bad token raises
        NotAuthenticated."""
        return await viewer_of(
            headers, client, self.settings, self.database, self.tokens, self.identity
        )

    def record_request(
        self, method: str, operation: str | None, status: int, seconds: float
    ) -> None:
        """Count and log one answered request."""
        if self.hot is not None and self.hot.hits:  # those first: the log keeps its order
            self.hot.flush()
        self.metrics.observe_request(operation, status, seconds)
        self.access_log.record(method, operation, status, seconds)

    def record_answered(self, hits: list[Hit]) -> None:
        """Count and log requests the HTTP protocol answered from the hot answers, as the
        view counts its own: metrics, the access log, response-cache hits; and keep their
        answers recently used in the response cache, as lookups would have."""
        by_operation: dict[str | None, list[float]] = {}
        for answer, _, seconds in hits:
            found = by_operation.get(answer.label)
            if found is None:
                found = by_operation[answer.label] = []
            found.append(seconds)
        for operation, durations in by_operation.items():
            self.metrics.observe_requests(operation, 200, durations)
        self.access_log.record_many(
            "GET", 200, [(answer.label, at, seconds) for answer, at, seconds in hits]
        )
        if self.caches is not None:
            self.caches.stats.add("response", "hit", len(hits))
        if self.responses is not None:
            self.responses.touch({answer.response_key for answer, _, _ in hits})

    async def context(
        self, request: HTTPConnection | None, viewer: Viewer | None = None
    ) -> Context:
        """A request's context. The viewer comes from the request unless given (in-process
        callers name theirs); a bad token raises NotAuthenticated."""
        db = self.database
        if viewer is None:
            viewer = await resolve_viewer(request, self.settings, db, self.tokens, self.identity)
        tags: set[str] = set()
        return Context(
            request=request,
            settings=self.settings,
            db=db,
            loaders=self.assembly.loaders.for_request(
                LoaderServices(db, self.extras, self.caches, tags)
            ),
            invalidate=self.invalidate,
            viewer=viewer,
            extras=self.extras,
            tags=tags,
            provided=self.provided,
            changes=self.changes,
            attention=self.assembly.attention,
        )

    async def invalidate(self, keys: list[str]) -> None:
        """Tell every cache, here and in other replicas, that these entities changed."""
        if self.caches is not None:
            await self.caches.invalidate(keys)

    async def execute(
        self,
        query: str | None,
        variables: dict[str, Any] | None = None,
        operation_name: str | None = None,
        *,
        request: HTTPConnection | None = None,
        allowed: Iterable[OperationType] | None = None,
        context: Context | None = None,
        known: bool = False,
    ) -> ExecutionResult:
        """Run one operation: the HTTP view and in-process callers share this.

        A known document (persisted or trusted: its text does not change) runs on its
        compiled plan once it has one (graph.plans); its first run, and whatever its plan
        leaves to it, goes through the generic executor, which then builds the plan."""
        schema = self.assembly.schema
        assert schema is not None
        if context is None:
            context = await self.context(request)
        plans = self.assembly.plans if known and query else None
        if plans is None:
            why = PLANS_OFF if self.assembly.plans is None else NOT_PERSISTED
        else:
            plan = plans.get(query, operation_name)
            if plan is not None and (allowed is None or plan.operation_type in allowed):
                result = await plan.execute(context, variables)
                if result is not None:
                    self.metrics.count_run("plan", "compiled")
                    return result
                why = DECLINED
            elif plan is not None:
                why = DECLINED
            else:
                why = NOT_PLANNABLE if plans.tried(query, operation_name) else FIRST_RUN
        self.metrics.count_run("generic", why)
        result = await schema.execute(
            query,
            variable_values=variables,
            context_value=context,
            operation_name=operation_name,
            allowed_operation_types=allowed,
        )
        if plans is not None and query and not isinstance(result, PreExecutionError):
            plans.learn(query, operation_name)  # built once; known documents cost a lookup
        return result
