"""Who may change a workload: the owners of the catalog entity it belongs to, and admins."""

from __future__ import annotations

from typing import Any

from graph.plugin import Info, Target, UserError, entity_owner
from plugins.pincompute.store import ENTITY_ANNOTATION, Key
from plugins.pincompute.types import compute_of
from plugins.pincompute.validation import ManifestError, parse_manifest

__all__ = ["ManifestOwner", "WorkloadOwner"]


class WorkloadOwner:
    """Targets the PinApp named by the ``cluster``, ``namespace`` and ``name`` arguments."""

    admin_only = False

    async def target(self, info: Info, arguments: dict[str, Any]) -> Target:
        key = Key(str(arguments["cluster"]), str(arguments["namespace"]), str(arguments["name"]))
        stored = compute_of(info).pinapps.get(key)
        ref = f"pinapp:{key}"
        if stored is None:
            return Target(ref, None, exists=False)
        owner = await entity_owner(info.context, stored.entity_ref) if stored.entity_ref else None
        return Target(ref, owner, state=_state(stored.body))

    async def snapshot(self, info: Info, target: Target) -> dict[str, Any] | None:
        if target.ref is None:
            return None
        cluster, namespace, name = target.ref.removeprefix("pinapp:").split("/", 2)
        stored = compute_of(info).pinapps.get(Key(cluster, namespace, name))
        return _state(stored.body) if stored is not None else None


class ManifestOwner:
    """Targets what a manifest describes: the owners of the entity it names must consent, and,
    when it replaces an object, the owners of that object's entity too."""

    admin_only = False

    async def target(self, info: Info, arguments: dict[str, Any]) -> Target:
        # A manifest that is not a valid one names no target: that is the client's mistake,
        # said (and audited) before anything else.
        try:
            body = parse_manifest(str(arguments["manifest"]))
        except ManifestError as exc:
            raise UserError(f"invalid manifest: {exc}") from None
        metadata = body["metadata"]
        kind = str(body["kind"])
        key = Key(str(arguments["cluster"]), metadata["namespace"], metadata["name"])
        ref = f"{kind.lower()}:{key}"
        new_owner = await entity_owner(info.context, metadata["annotations"][ENTITY_ANNOTATION])
        stored = compute_of(info).store(kind).get(key)
        if stored is None:
            return Target(ref, new_owner)
        old_owner = (
            await entity_owner(info.context, stored.entity_ref) if stored.entity_ref else None
        )
        others = (new_owner,) if new_owner and new_owner != old_owner else ()
        return Target(ref, old_owner, state=_state(stored.body), other_owner_refs=others)

    async def snapshot(self, info: Info, target: Target) -> dict[str, Any] | None:
        if target.ref is None:
            return None
        kind, _, rest = target.ref.partition(":")
        cluster, namespace, name = rest.split("/", 2)
        store = compute_of(info).store("PinApp" if kind == "pinapp" else "PinScaler")
        stored = store.get(Key(cluster, namespace, name))
        return _state(stored.body) if stored is not None else None


def _state(body: dict[str, Any]) -> dict[str, Any]:
    """What the audit log keeps of a workload: its metadata essentials and spec."""
    metadata = body.get("metadata") or {}
    return {
        "kind": body.get("kind"),
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "annotations": metadata.get("annotations") or {},
        "spec": body.get("spec") or {},
    }
