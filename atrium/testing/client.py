"""An app per test and a client for it: ``AtriumClient``, an ``httpx.AsyncClient`` over the
app's ASGI interface with GraphQL shortcuts (and subscriptions, over an in-process websocket:
``atrium.testing.websocket``), and ``AppStack``, which starts apps (their lifespan: database
pool, migrations, plugins' lifespans) and stops them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import orjson

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from atrium.testing.websocket import GraphQLWebSocket
    from graph.plugin import Plugin
    from sources.catalog.store import ApplyResult

__all__ = [
    "AppStack",
    "AtriumClient",
    "CatalogErrors",
    "GraphQLErrors",
    "PlanRuns",
    "Statements",
]

# httpx's ASGI transport calls from 127.0.0.1: the tests' trusted proxy.
TEST_DEFAULTS: dict[str, Any] = {
    "trusted_proxies": ["127.0.0.1"],
    "admin_group": "group:default/admins",
    # No console build unless a test names one: its documents are not wanted.
    "web_dir": Path(__file__).parent / "no-console-build",
    # A page waits for its panels as long as the settings allow (0.25 s by default): what a
    # test asserts of a page is what it holds, which a busy machine would leave to the client.
    "ssr_panel_budget": 10.0,
}
# httpx's own request headers, which a websocket's handshake does not carry.
_HTTP_ONLY = frozenset({"accept", "accept-encoding", "connection", "user-agent"})


class GraphQLErrors(AssertionError):
    """An answer with errors (or not 200) that the caller did not expect; ``body`` is the
    answer and ``errors`` its errors. An AssertionError, so pytest shows it as a failure."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        self.errors: list[dict[str, Any]] = list(body.get("errors") or [])
        super().__init__(f"HTTP {status}: {self.errors or body}")


class CatalogErrors(AssertionError):
    """Catalog documents that ``load_catalog`` could not store, each as the catalog reports it."""


@dataclass
class Statements:
    """SQL statements sent by requests (background jobs' apart) within a ``with`` block."""

    count: int = 0


@dataclass
class PlanRuns:
    """Operations executed within a ``with`` block: on a compiled plan (``compiled``) or on
    the generic executor (``generic``, by reason in ``reasons``: plans_off, not_persisted,
    first_run, not_plannable, declined). Answers served from a cache run nothing."""

    compiled: int = 0
    generic: int = 0
    reasons: dict[str, int] = field(default_factory=dict)


class AtriumClient(httpx.AsyncClient):
    """An HTTP client bound to one running app, with a GraphQL shortcut."""

    app: Starlette
    # Work to do before the first request (a user's group memberships, for as_user).
    _before_first: Callable[[], Awaitable[None]] | None = None
    _admin_token: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._children: list[AtriumClient] = []

    @property
    def services(self) -> Any:
        """The app's services: ``db`` (the database, ``db.queries`` counting statements),
        ``caches``, ``settings``, ``assembly`` (schema, plugins' contributions, plans),
        ``metrics``."""
        return self.app.state.services

    async def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        if self._before_first is not None:
            prepare, self._before_first = self._before_first, None
            await prepare()
        return await super().send(request, **kwargs)

    async def gql(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        *,
        expect_errors: bool = False,
        user: str | None = None,
        token: str | None = None,
    ) -> dict[str, Any]:
        """POST a query; its answer (``data``, and ``errors`` when expected). Raises
        ``GraphQLErrors`` when the answer has errors or is not 200, unless ``expect_errors``.
        As this client's user (``as_user``), or as ``user`` (the trusted proxy's header), or
        with an API ``token``."""
        headers = {}
        if user is not None:
            headers[self.services.settings.user_header] = user
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        response = await self.post(
            "/graphql", json={"query": query, "variables": variables}, headers=headers
        )
        body: dict[str, Any] = response.json()
        if not expect_errors and ("errors" in body or response.status_code != 200):
            raise GraphQLErrors(response.status_code, body)
        return body

    async def persisted_get(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        """GET a document by its hash as the console (Apollo Client) does, registering it
        (automatic persisted queries) first if the server does not know it."""
        from sources.persisted import document_hash

        extensions = {"persistedQuery": {"version": 1, "sha256Hash": document_hash(query)}}
        params = {
            "extensions": orjson.dumps(extensions).decode(),
            "variables": orjson.dumps(variables or {}).decode(),
        }
        headers = {"apollo-require-preflight": "true", **(headers or {})}
        response = await self.get("/graphql", params=params, headers=headers)
        if response.status_code == 200 and "PersistedQueryNotFound" in response.text:
            registered = await self.post(
                "/graphql",
                json={"query": query, "variables": variables, "extensions": extensions},
                headers=headers,
            )
            assert registered.status_code < 500, registered.text
            response = await self.get("/graphql", params=params, headers=headers)
        return response

    def websocket(
        self, headers: Mapping[str, str] | None = None, **options: Any
    ) -> GraphQLWebSocket:
        """A graphql-transport-ws connection to the app, in process (``async with
        client.websocket() as ws: await ws.subscribe("1", query)``), as this client's user
        (``as_user``), or as ``headers`` say (``{"Authorization": f"Bearer {token}"}``).
        ``options``: ``GraphQLWebSocket``'s (``payload`` of connection_init, ``timeout``)."""
        from atrium.testing.websocket import GraphQLWebSocket

        own = {k: v for k, v in self.headers.items() if k.lower() not in _HTTP_ONLY}
        return GraphQLWebSocket(self.app, {**own, **(headers or {})}, **options)

    async def admin_token(self) -> str:
        """An API token of the admins' scope (made once per client)."""
        from sources.auth import create_token

        if not self._admin_token:
            _, self._admin_token = await create_token(self.services.db, "tests", ["admin"], None)
        return self._admin_token

    def as_user(self, ref: str, groups: Iterable[str] = ()) -> AtriumClient:
        """A client of the same app whose requests come from the user ``ref`` (``ann`` or
        ``user:default/ann``), signed in as the trusted proxy says so in production. With
        ``groups`` (refs, ``group:`` by default), the user is made a member of each before
        the first request (the groups are made when the catalog lacks them), so ownership
        rules see them: ``as_user("ann", groups=["oncall-team"])`` may change what
        oncall-team owns; ``groups=["admins"]`` makes an admin."""
        from graph.plugin import normalize_ref, parse_ref

        user = parse_ref(normalize_ref(ref, default_kind="user"))
        if user.kind != "User" or user.namespace != "default":
            raise ValueError(f"{ref!r}: the proxy names users of the default namespace only")
        child = AtriumClient(
            transport=self._transport,
            base_url=self.base_url,
            headers={**self.headers, self.services.settings.user_header: user.name},
        )
        child.app = self.app
        wanted = [normalize_ref(g, default_kind="group") for g in groups]
        if wanted:

            async def join() -> None:
                await self._join_groups(user.name, wanted)

            child._before_first = join
        self._children.append(child)
        return child

    async def _join_groups(self, name: str, groups: list[str]) -> None:
        from graph.plugin import parse_ref

        db = self.services.db
        user_ref = f"user:default/{name}"
        rows = await db.fetch(
            "select ref, name, namespace, title, spec from entities where ref = any($1)",
            [user_ref, *groups],
        )
        found = {row["ref"]: row for row in rows}
        documents: list[dict[str, Any]] = []
        for group in groups:
            if group not in found:
                parts = parse_ref(group)
                documents.append(
                    {
                        "apiVersion": "backstage.io/v1alpha1",
                        "kind": "Group",
                        "metadata": {"name": parts.name, "namespace": parts.namespace},
                        "spec": {"type": "team", "children": []},
                    }
                )
        existing = found.get(user_ref)
        spec = dict(_json(existing["spec"])) if existing is not None else {}
        member_of = list(spec.get("memberOf") or [])
        spec["memberOf"] = member_of + [g for g in groups if g not in member_of]
        metadata: dict[str, Any] = {"name": existing["name"] if existing else name}
        if existing is not None and existing["title"]:
            metadata["title"] = existing["title"]
        documents.append(
            {
                "apiVersion": "backstage.io/v1alpha1",
                "kind": "User",
                "metadata": metadata,
                "spec": spec,
            }
        )
        text = "\n---\n".join(orjson.dumps(d).decode() for d in documents)
        await self.load_catalog(text, location=f"atrium-testing:{name}")

    async def load_catalog(self, yaml_text: str, location: str = "atrium-testing") -> ApplyResult:
        """Store catalog documents (``catalog-info.yaml`` text, one or more documents) as from
        ``location``, and drop what caches held of what changed; the catalog's result
        (``created``, ``updated``...). Raises ``CatalogErrors`` naming the documents it could
        not store."""
        from sources.catalog.documents import parse_documents
        from sources.catalog.store import apply_batch

        result = await apply_batch(self.services.db, parse_documents(yaml_text, location))
        if result.errors:
            raise CatalogErrors("\n".join(str(e) for e in result.errors))
        await self.services.invalidate(result.affected)
        return result

    @contextmanager
    def statements(self) -> Iterator[Statements]:
        """Count the SQL statements requests send within the block (``.count``, read after
        it); background jobs' statements are not counted."""
        db = self.services.db
        counted = Statements()
        before = db.queries
        try:
            yield counted
        finally:
            counted.count = db.queries - before

    @contextmanager
    def plan_runs(self) -> Iterator[PlanRuns]:
        """Count the operations executed within the block, on a compiled plan and on the
        generic executor (``atrium_operation_runs_total`` in /metrics)."""
        metrics = self.services.metrics
        counted = PlanRuns()
        before = metrics.operation_runs()
        try:
            yield counted
        finally:
            for (executor, reason), n in metrics.operation_runs().items():
                added = n - before.get((executor, reason), 0)
                if not added:
                    continue
                if executor == "plan":
                    counted.compiled += added
                else:
                    counted.generic += added
                    counted.reasons[reason] = counted.reasons.get(reason, 0) + added

    async def aclose(self) -> None:
        for child in self._children:
            await child.aclose()
        self._children.clear()
        await super().aclose()  # the ASGI transport a child shares holds nothing to close


def _json(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, (str, bytes)) else value


class AppStack:
    """Apps started for one test, each stopped (in reverse order) by ``aclose``."""

    def __init__(self, database_url: str, **defaults: Any) -> None:
        self.database_url = database_url
        self.defaults = {**TEST_DEFAULTS, "database_url": database_url, **defaults}
        self._started: list[tuple[Any, AtriumClient]] = []

    async def start(self, plugins: Sequence[Plugin], **settings: Any) -> AtriumClient:
        """An app with Atrium's core and ``plugins``, its settings the test defaults and
        ``settings`` (``Settings`` field names), started: migrations applied, plugins'
        lifespans entered. Its client answers as the app would behind a trusted proxy."""
        from atrium.app import create_app
        from graph.settings import Settings

        app = create_app(Settings(**{**self.defaults, **settings}), plugins=list(plugins))
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        # As GraphQL-over-HTTP clients ask (httpx's own default, */*, is answered as JSON).
        client = AtriumClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://atrium.test",
            headers={"accept": "application/graphql-response+json, application/json;q=0.9"},
        )
        client.app = app
        self._started.append((lifespan, client))
        return client

    async def aclose(self) -> None:
        while self._started:
            lifespan, client = self._started.pop()
            await client.aclose()
            await lifespan.__aexit__(None, None, None)
