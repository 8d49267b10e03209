"""Root fields of PinCompute: workloads across clusters, logs, and the changes owners make."""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncGenerator, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from graph.plugin import EntityParent, Info, Parent, UserError, entities_owned_by, strawberry
from plugins.pincompute.compute import Compute, ComputeError, pod_of
from plugins.pincompute.details import (
    ClusterError,
    ClusterStatus,
    WorkloadLogLine,
    check_log_bounds,
)
from plugins.pincompute.logs import follow_workload, needle_of, pod_names
from plugins.pincompute.names import InvalidName, check_label, check_subdomain
from plugins.pincompute.store import Key, ObjectStore, StoredObject, normalise_ref
from plugins.pincompute.types import PinApp, PinScaler, compute_of

__all__ = ["ComponentWorkloads", "ComputeQuery", "ComputeSubscription"]
MAX_PAGE = 100
MAX_TAIL_LINES = 10_000


@strawberry.input(description="Each field narrows the result; all are optional.")
class WorkloadFilter:
    owner: str | None = strawberry.field(
        default=None, description="A user or group: workloads of what it owns (transitively)."
    )
    entity: list[str] | None = strawberry.field(default=None, description="Catalog entity refs.")
    namespace: list[str] | None = None
    cluster: list[str] | None = None
    search: str | None = strawberry.field(default=None, description="Part of the name.")


@strawberry.type(name="WorkloadPageInfo")
class PageInfo:
    has_next_page: bool
    end_cursor: str | None


@strawberry.type
class PinAppEdge:
    cursor: str
    node: PinApp


@strawberry.type
class PinScalerEdge:
    cursor: str
    node: PinScaler


@strawberry.type(description="A page of PinApps (Relay connection) and the clusters missing.")
class PinAppConnection:
    edges: list[PinAppEdge]
    nodes: list[PinApp]
    total_count: int
    page_info: PageInfo
    cluster_errors: list[ClusterError] = strawberry.field(
        description="Clusters that could not answer: the rest of the result is still here."
    )


@strawberry.type
class PinScalerConnection:
    edges: list[PinScalerEdge]
    nodes: list[PinScaler]
    total_count: int
    page_info: PageInfo
    cluster_errors: list[ClusterError]


@strawberry.type
class PodLogs:
    pod: str
    container: str | None
    text: str


async def _select(
    info: Info, store: ObjectStore, where: WorkloadFilter | None
) -> list[StoredObject]:
    """The objects matching a filter, from the best index, in (name, namespace, cluster) order."""
    where = where or WorkloadFilter()
    if where.owner:
        candidates = store.of_entities(await entities_owned_by(info.context, where.owner))
    elif where.entity:
        candidates = store.of_entities([normalise_ref(r) for r in where.entity])
    elif where.namespace:
        candidates = [o for ns in where.namespace for o in store.in_namespace(ns)]
    elif where.cluster:
        candidates = [o for c in where.cluster for o in store.in_cluster(c)]
    else:
        candidates = store.all()
    entities = {normalise_ref(r) for r in where.entity} if where.entity else None
    namespaces = set(where.namespace) if where.namespace else None
    clusters = set(where.cluster) if where.cluster else None
    needle = where.search.lower() if where.search else None
    found = [
        o
        for o in candidates
        if (entities is None or o.entity_ref in entities)
        and (namespaces is None or o.key.namespace in namespaces)
        and (clusters is None or o.key.cluster in clusters)
        and (needle is None or needle in o.key.name)
    ]
    found.sort(key=lambda o: (o.key.name, o.key.namespace, o.key.cluster))
    return found


def _page(
    found: list[StoredObject], first: int, after: str | None
) -> tuple[list[StoredObject], bool]:
    if not 0 <= first <= MAX_PAGE:
        raise UserError(f"first must be between 0 and {MAX_PAGE}")
    start = 0
    if after:
        try:
            name, namespace, cluster = base64.urlsafe_b64decode(after).decode().split("\0")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise UserError("after is not a cursor this API issued") from None
        position = (name, namespace, cluster)
        start = next(
            (
                i
                for i, o in enumerate(found)
                if (o.key.name, o.key.namespace, o.key.cluster) > position
            ),
            len(found),
        )
    page = found[start : start + first]
    return page, start + first < len(found)


def _cursor(stored: StoredObject) -> str:
    key = stored.key
    return base64.urlsafe_b64encode(f"{key.name}\0{key.namespace}\0{key.cluster}".encode()).decode()


C = TypeVar("C")


async def _connection(
    info: Info,
    compute: Compute,
    store: ObjectStore,
    where: WorkloadFilter | None,
    first: int,
    after: str | None,
    node: Any,
    edge: Any,
    connection: Callable[..., C],
) -> C:
    """One page of a kind's objects as its Relay connection, with the clusters missing."""
    found = await _select(info, store, where)
    page, more = _page(found, first, after)
    nodes = [node.of(o) for o in page]
    return connection(
        edges=[edge(cursor=_cursor(o), node=n) for o, n in zip(page, nodes, strict=True)],
        nodes=nodes,
        total_count=len(found),
        page_info=PageInfo(has_next_page=more, end_cursor=_cursor(page[-1]) if page else None),
        cluster_errors=_errors(compute, where),
    )


def _errors(compute: Compute, where: WorkloadFilter | None) -> list[ClusterError]:
    clusters = where.cluster if where and where.cluster else None
    return [
        ClusterError(cluster=c, message=m) for c, m in sorted(compute.problems(clusters).items())
    ]


@strawberry.type
class ComputeQuery:
    @strawberry.field(description="Every cluster with its informers' health.")
    def clusters(self, info: Info) -> list[ClusterStatus]:
        compute = compute_of(info)
        return [
            ClusterStatus(
                name=c.name,
                synced=c.synced,
                healthy=c.problem is None,
                last_event_at=_time(c.health.last_event_at),
                last_error=c.health.last_error,
                last_error_at=_time(c.health.last_error_at),
                pin_apps=len(compute.pinapps.in_cluster(c.name)),
                pin_scalers=len(compute.pinscalers.in_cluster(c.name)),
            )
            for c in compute.clusters.values()
        ]

    @strawberry.field
    def pin_app(self, info: Info, cluster: str, namespace: str, name: str) -> PinApp | None:
        found = compute_of(info).pinapps.get(Key(cluster, namespace, name))
        return PinApp.of(found) if found is not None else None

    @strawberry.field(
        description="PinApps across clusters, by owner, entity, namespace or cluster."
    )
    async def pin_apps(
        self,
        info: Info,
        filter: WorkloadFilter | None = None,
        first: int = 20,
        after: str | None = None,
    ) -> PinAppConnection:
        compute = compute_of(info)
        return await _connection(
            info,
            compute,
            compute.pinapps,
            filter,
            first,
            after,
            PinApp,
            PinAppEdge,
            PinAppConnection,
        )

    @strawberry.field(description="PinScalers across clusters, with the same filters.")
    async def pin_scalers(
        self,
        info: Info,
        filter: WorkloadFilter | None = None,
        first: int = 20,
        after: str | None = None,
    ) -> PinScalerConnection:
        compute = compute_of(info)
        return await _connection(
            info,
            compute,
            compute.pinscalers,
            filter,
            first,
            after,
            PinScaler,
            PinScalerEdge,
            PinScalerConnection,
        )

    @strawberry.field(
        description="A pod's log: the tail, since some seconds, or the previous container's."
    )
    async def pod_logs(
        self,
        info: Info,
        cluster: str,
        namespace: str,
        pod: str,
        container: str | None = None,
        tail_lines: int | None = 200,
        since_seconds: int | None = None,
        previous: bool = False,
        timestamps: bool = False,
    ) -> PodLogs:
        _check_log_range(tail_lines, since_seconds)
        _check_pod(namespace, pod, container)
        try:
            text = await compute_of(info).pod_log(
                cluster,
                namespace,
                pod,
                container=container,
                tail_lines=tail_lines,
                since_seconds=since_seconds,
                previous=previous,
                timestamps=timestamps,
            )
        except ComputeError as exc:
            raise UserError(str(exc), "UNAVAILABLE") from exc
        return PodLogs(pod=pod, container=container, text=text)


def _check_pod(namespace: str, pod: str, container: str | None) -> None:
    """The names of a pod's log, before they go into the cluster's URL (``names``)."""
    try:
        check_label("namespace", namespace)
        check_subdomain("pod", pod)
        if container is not None:
            check_label("container", container)
    except InvalidName as exc:
        raise UserError(str(exc)) from None


def _check_log_range(tail_lines: int | None, since_seconds: int | None) -> None:
    # Kubernetes refuses these with a 400 the client would read as the cluster failing.
    if tail_lines is not None and not 1 <= tail_lines <= MAX_TAIL_LINES:
        raise UserError(f"tailLines must be between 1 and {MAX_TAIL_LINES}")
    if since_seconds is not None and since_seconds < 1:
        raise UserError("sinceSeconds must be at least 1")


def _time(value: float | None) -> datetime | None:
    return datetime.fromtimestamp(value, UTC) if value is not None else None


@strawberry.type
class ComputeSubscription:
    @strawberry.subscription(description="A pod's log lines as they are written.")
    async def pod_log_tail(
        self,
        info: Info,
        cluster: str,
        namespace: str,
        pod: str,
        container: str | None = None,
        tail_lines: int | None = 10,
    ) -> AsyncGenerator[str, None]:
        _check_log_range(tail_lines, None)
        _check_pod(namespace, pod, container)
        try:
            async for line in compute_of(info).follow_log(
                cluster, namespace, pod, container=container, tail_lines=tail_lines
            ):
                yield line
        except ComputeError as exc:
            raise UserError(str(exc), "UNAVAILABLE") from exc

    @strawberry.subscription(
        description="A PinApp's log: the merged tail of its pods, then every line any of them "
        "writes (pods that start later included), holding a text when `filter` is given."
    )
    async def pin_app_log_tail(
        self,
        info: Info,
        cluster: str,
        namespace: str,
        name: str,
        tail_lines: int = 10,
        filter: str | None = None,
    ) -> AsyncGenerator[WorkloadLogLine, None]:
        check_log_bounds(tail_lines, None, filter)
        compute = compute_of(info)
        key = Key(cluster, namespace, name)
        if compute.pinapps.get(key) is None:
            raise UserError(f"no PinApp {key}", "NOT_FOUND")

        async def pods() -> list[str]:
            items = await compute.namespace_items(cluster, namespace, "pods")
            return pod_names([i for i in items if pod_of(i, key)])

        try:
            async for line in follow_workload(
                compute, key, pods, tail=tail_lines, needle=needle_of(filter)
            ):
                yield WorkloadLogLine.of(line)
        except ComputeError as exc:
            raise UserError(str(exc), "UNAVAILABLE") from exc


@strawberry.type
class ComponentWorkloads:
    """Joins the catalog's Component type: its workloads in every cluster."""

    @strawberry.field(description="PinApps annotated with this component's ref, in every cluster.")
    def workloads(self, parent: Parent[EntityParent], info: Info) -> list[PinApp]:
        ref = parent.ref
        found = (
            compute_of(info).pinapps.of_entities([ref])
            if info.context.extras.get("pincompute")
            else []
        )
        found.sort(key=lambda o: (o.key.cluster, o.key.namespace, o.key.name))
        return [PinApp.of(o) for o in found]
