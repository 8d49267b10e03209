"""Root fields of PinCompute: workloads across clusters, logs, and the changes owners make."""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import Any

from graph.plugin import Authorize, Info, UserError, entities_owned_by, strawberry
from plugins.pincompute.authz import ManifestOwner, WorkloadOwner
from plugins.pincompute.compute import PINAPP, PINSCALER, Compute, ComputeError
from plugins.pincompute.store import Key, ObjectStore, StoredObject, normalise_ref
from plugins.pincompute.types import ClusterError, ClusterStatus, PinApp, PinScaler, compute_of
from plugins.pincompute.validation import (
    ManifestError,
    check_quota,
    parse_manifest,
    usage,
    validate_body,
)

__all__ = ["ComponentWorkloads", "ComputeMutation", "ComputeQuery", "ComputeSubscription"]

RESTART_ANNOTATION = "atrium.dev/restartedAt"
MAX_PAGE = 100


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
        found = await _select(info, compute.pinapps, filter)
        page, more = _page(found, first, after)
        apps = [PinApp.of(o) for o in page]
        return PinAppConnection(
            edges=[PinAppEdge(cursor=_cursor(o), node=a) for o, a in zip(page, apps, strict=True)],
            nodes=apps,
            total_count=len(found),
            page_info=PageInfo(has_next_page=more, end_cursor=_cursor(page[-1]) if page else None),
            cluster_errors=_errors(compute, filter),
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
        found = await _select(info, compute.pinscalers, filter)
        page, more = _page(found, first, after)
        scalers = [PinScaler.of(o) for o in page]
        return PinScalerConnection(
            edges=[
                PinScalerEdge(cursor=_cursor(o), node=s) for o, s in zip(page, scalers, strict=True)
            ],
            nodes=scalers,
            total_count=len(found),
            page_info=PageInfo(has_next_page=more, end_cursor=_cursor(page[-1]) if page else None),
            cluster_errors=_errors(compute, filter),
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
        if tail_lines is not None and not 1 <= tail_lines <= 10_000:
            raise UserError("tailLines must be between 1 and 10000")
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
        try:
            async for line in compute_of(info).follow_log(
                cluster, namespace, pod, container=container, tail_lines=tail_lines
            ):
                yield line
        except ComputeError as exc:
            raise UserError(str(exc), "UNAVAILABLE") from exc


def _app(compute: Compute, cluster: str, namespace: str, name: str) -> StoredObject:
    found = compute.pinapps.get(Key(cluster, namespace, name))
    if found is None:
        raise UserError(f"no PinApp {namespace}/{name} in cluster {cluster}", "NOT_FOUND")
    return found


async def _within_quota(
    info: Info,
    compute: Compute,
    stored_or_body: dict[str, Any],
    changed: dict[tuple[str, Key], dict[str, Any] | None],
) -> None:
    """Refuse a change that would take the owning team past its quota."""
    from graph.plugin import entity_owner

    annotations = (stored_or_body.get("metadata") or {}).get("annotations") or {}
    entity_ref = annotations.get("atrium.dev/entity-ref")
    owner = await entity_owner(info.context, entity_ref) if isinstance(entity_ref, str) else None
    if owner is None:
        return
    settings = compute.settings
    quota = settings.compute_quotas.get(owner, settings.compute_default_quota)
    refs = await entities_owned_by(info.context, owner, transitive=False)
    try:
        check_quota(owner, quota, usage(compute, refs, changed))
    except ManifestError as exc:
        raise UserError(f"over quota: {exc}", "QUOTA_EXCEEDED") from exc


async def _patch(compute: Compute, kind: str, key: Key, patch: dict[str, Any]) -> dict[str, Any]:
    try:
        return await compute.merge_patch(kind, key, patch)
    except ComputeError as exc:
        raise UserError(str(exc), "UNAVAILABLE") from exc


def _merged(body: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """What a merge patch makes of a body (RFC 7386), to validate before sending."""
    result = dict(body)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merged(result[key], value)
        else:
            result[key] = value
    return result


@strawberry.type
class ComputeMutation:
    @strawberry.mutation(
        description="Scale a PinApp: its PinScaler's bounds when it has one, else its replicas.",
        extensions=[Authorize(WorkloadOwner(), "pincompute.scale")],
    )
    async def scale_workload(
        self,
        info: Info,
        cluster: str,
        namespace: str,
        name: str,
        replicas: int | None = None,
        min_replicas: int | None = None,
        max_replicas: int | None = None,
    ) -> PinApp:
        compute = compute_of(info)
        app = _app(compute, cluster, namespace, name)
        scaler = compute.scaler_for(app.key)
        if scaler is not None:
            spec = scaler.body.get("spec") or {}
            low = min_replicas if min_replicas is not None else replicas
            high = max_replicas if max_replicas is not None else replicas
            patch = {
                "spec": {
                    "minReplicas": low if low is not None else spec.get("minReplicas"),
                    "maxReplicas": high if high is not None else spec.get("maxReplicas"),
                }
            }
            kind, target = PINSCALER.kind, scaler
        else:
            if replicas is None:
                raise UserError("replicas is required: this PinApp has no PinScaler")
            patch, kind, target = {"spec": {"replicas": replicas}}, PINAPP.kind, app
        planned = _merged(target.body, patch)
        _validate(kind, planned)
        await _within_quota(info, compute, app.body, {(kind, target.key): planned})
        await _patch(compute, kind, target.key, patch)
        return PinApp.of(_app(compute, cluster, namespace, name))

    @strawberry.mutation(
        description="Restart a PinApp's pods (a new pod-template annotation rolls them).",
        extensions=[Authorize(WorkloadOwner(), "pincompute.restart")],
    )
    async def restart_workload(self, info: Info, cluster: str, namespace: str, name: str) -> PinApp:
        compute = compute_of(info)
        app = _app(compute, cluster, namespace, name)
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        await _patch(
            compute,
            PINAPP.kind,
            app.key,
            {"spec": {"template": {"annotations": {RESTART_ANNOTATION: stamp}}}},
        )
        return PinApp.of(_app(compute, cluster, namespace, name))

    @strawberry.mutation(
        description="Roll a PinApp out to another image.",
        extensions=[Authorize(WorkloadOwner(), "pincompute.setImage")],
    )
    async def set_workload_image(
        self, info: Info, cluster: str, namespace: str, name: str, image: str
    ) -> PinApp:
        compute = compute_of(info)
        app = _app(compute, cluster, namespace, name)
        patch = {"spec": {"image": image}}
        _validate(PINAPP.kind, _merged(app.body, patch))
        await _patch(compute, PINAPP.kind, app.key, patch)
        return PinApp.of(_app(compute, cluster, namespace, name))

    @strawberry.mutation(
        description="Create or update a PinApp or PinScaler from a manifest: validated against "
        "its CRD schema, checked against the owning team's quota, then created or merge-patched.",
        extensions=[Authorize(ManifestOwner(), "pincompute.apply")],
    )
    async def apply_workload_manifest(self, info: Info, cluster: str, manifest: str) -> ApplyResult:
        compute = compute_of(info)
        compute.cluster(cluster) if cluster in compute.clusters else _no_cluster(cluster)
        try:
            body = parse_manifest(manifest)
        except ManifestError as exc:
            raise UserError(f"invalid manifest: {exc}") from exc
        kind = body["kind"]
        key = Key(cluster, body["metadata"]["namespace"], body["metadata"]["name"])
        await _within_quota(info, compute, body, {(kind, key): body})
        existing = compute.store(kind).get(key)
        try:
            if existing is None:
                stored = await compute.create(kind, cluster, body)
            else:
                patch = {
                    "metadata": {
                        k: body["metadata"][k]
                        for k in ("labels", "annotations")
                        if k in body["metadata"]
                    },
                    "spec": body["spec"],
                }
                stored = await compute.merge_patch(kind, key, patch)
        except ComputeError as exc:
            raise UserError(str(exc), "UNAVAILABLE") from exc
        found = compute.store(kind).get(key)
        assert found is not None and stored is not None
        return ApplyResult(
            created=existing is None,
            pin_app=PinApp.of(found) if kind == PINAPP.kind else None,
            pin_scaler=PinScaler.of(found) if kind == PINSCALER.kind else None,
        )


@strawberry.type
class ApplyResult:
    created: bool
    pin_app: PinApp | None
    pin_scaler: PinScaler | None


def _no_cluster(name: str) -> None:
    raise UserError(f"no cluster named {name}", "NOT_FOUND")


def _validate(kind: str, body: dict[str, Any]) -> None:
    try:
        validate_body(kind, body)
    except ManifestError as exc:
        raise UserError(f"invalid change: {exc}") from exc


@strawberry.type
class ComponentWorkloads:
    """Joins the catalog's Component type: its workloads in every cluster."""

    @strawberry.field(description="PinApps annotated with this component's ref, in every cluster.")
    def workloads(self, info: Info) -> list[PinApp]:
        ref: str = self.ref  # type: ignore[attr-defined]  # the Component this field joins
        found = (
            compute_of(info).pinapps.of_entities([ref])
            if info.context.extras.get("pincompute")
            else []
        )
        found.sort(key=lambda o: (o.key.cluster, o.key.namespace, o.key.name))
        return [PinApp.of(o) for o in found]
