"""What needs attention in a team's workloads: PinApps with fewer ready replicas than they
want, read from the informers' stores (no call to any cluster)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC
from typing import Any

from graph.plugin import AttentionItem, AttentionLevel, Context, workload_href
from plugins.pincompute.compute import Compute
from plugins.pincompute.details import when
from plugins.pincompute.store import StoredObject
from plugins.pincompute.types import PLUGIN_ID

__all__ = ["workload_attention"]


async def workload_attention(context: Context, refs: Sequence[str]) -> list[AttentionItem]:
    compute: Compute | None = context.extras.get(PLUGIN_ID)
    if compute is None:
        return []
    found = [_item(app) for app in compute.pinapps.of_entities(refs)]
    return [item for item in found if item is not None]


def _item(app: StoredObject) -> AttentionItem | None:
    spec: dict[str, Any] = app.body.get("spec") or {}
    status: dict[str, Any] = app.body.get("status") or {}
    # As PinApp.desiredReplicas and readyReplicas show them.
    desired = int(status.get("replicas") or spec.get("replicas") or 0)
    ready = int(status.get("readyReplicas") or 0)
    if ready >= desired or app.entity_ref is None:
        return None
    key = app.key
    available = next(
        (
            c
            for c in status.get("conditions") or []
            if isinstance(c, dict) and c.get("type") == "Available" and c.get("status") != "True"
        ),
        None,
    )
    since = when(available.get("lastTransitionTime")) if available is not None else None
    return AttentionItem(
        app.entity_ref,
        AttentionLevel.CRITICAL if ready == 0 else AttentionLevel.WARNING,
        f"{key.name} in {key.namespace} on {key.cluster}: {ready} of {desired} replicas ready",
        detail=(available.get("message") or available.get("reason")) if available else None,
        since=since.replace(tzinfo=UTC) if since is not None and since.tzinfo is None else since,
        href=workload_href(key.cluster, key.namespace, key.name),
    )
