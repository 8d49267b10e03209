"""Who may change a workload: the owners of the catalog entity it belongs to, and admins."""

from __future__ import annotations

from typing import Any

from graph.plugin import Info, Target, UserError, entity_owner
from plugins.pincompute.compute import PINAPP, PINSCALER, Compute
from plugins.pincompute.store import ENTITY_ANNOTATION, Key, StoredObject
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
        return Target(ref, await _owner(info, stored), state=_state(stored.body))

    async def snapshot(self, info: Info, target: Target) -> dict[str, Any] | None:
        if target.ref is None:
            return None
        cluster, namespace, name = target.ref.removeprefix("pinapp:").split("/", 2)
        stored = compute_of(info).pinapps.get(Key(cluster, namespace, name))
        return _state(stored.body) if stored is not None else None


class ManifestOwner:
    """Targets what a manifest describes, and what it reaches, as the platform's job submission
    enforces it:

    - the owners of the entity it names must consent, and, when it replaces an object, the
      owners of that object's entity too;
    - the namespace it lands in belongs to the teams whose workloads are in it (their entities'
      owners; one of them must consent): the Secrets and ConfigMaps a PinApp reads are its
      namespace's. A namespace with no workload in it is the first comer's;
    - a PinScaler's PinApp must be one the viewer may change, and may not have a PinScaler of
      another owner already (nobody may take it over, admins included);
    - a PinApp may not claim an ingress host that another owner's PinApp serves.
    """

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
        compute = compute_of(info)
        touches = await _reached(info, compute, kind, key, body, new_owner)
        stored = compute.store(kind).get(key)
        if stored is None:
            return Target(ref, new_owner, touches=touches)
        old_owner = await _owner(info, stored)
        others = (new_owner,) if new_owner and new_owner != old_owner else ()
        return Target(
            ref, old_owner, state=_state(stored.body), other_owner_refs=others, touches=touches
        )

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


async def _owner(info: Info, stored: StoredObject) -> str | None:
    ref = stored.entity_ref
    return await entity_owner(info.context, ref) if ref else None


async def _reached(
    info: Info,
    compute: Compute,
    kind: str,
    key: Key,
    body: dict[str, Any],
    new_owner: str | None,
) -> tuple[Target, ...]:
    """What applying ``body`` at ``key`` reaches beyond the object itself (ManifestOwner)."""
    reached = []
    spec = body.get("spec") or {}
    if kind == PINSCALER.kind:
        app_name = (spec.get("targetRef") or {}).get("name")
        app = compute.pinapps.get(Key(key.cluster, key.namespace, app_name)) if app_name else None
        if app is not None:
            conflict = None
            for scaler in compute.scalers_of(app.key):
                owner = await _owner(info, scaler)
                if scaler.key != key and owner != new_owner:
                    conflict = (
                        f"PinApp {app.key} already has PinScaler {scaler.key.name}, owned by "
                        f"{owner or 'nobody'}"
                    )
                    break
            reached.append(Target(f"pinapp:{app.key}", await _owner(info, app), conflict=conflict))
    elif kind == PINAPP.kind:
        host = _host(body)
        for app in compute.pinapps.all() if host else ():
            if app.key == key or _host(app.body) != host:
                continue
            owner = await _owner(info, app)
            if owner != new_owner:
                conflict = (
                    f"host {host} is served by PinApp {app.key}, owned by {owner or 'nobody'}"
                )
                reached.append(Target(f"pinapp:{app.key}", owner, conflict=conflict))
                break
    teams = await _namespace_owners(info, compute, kind, key)
    if teams:
        namespace = Target(f"namespace:{key.cluster}/{key.namespace}", None, any_owner_refs=teams)
        reached.append(namespace)
    return tuple(reached)


async def _namespace_owners(info: Info, compute: Compute, kind: str, key: Key) -> tuple[str, ...]:
    """The owners of the entities whose workloads are in ``key``'s namespace (the object at
    ``key`` itself left out)."""
    entities = {
        stored.entity_ref
        for store in (compute.pinapps, compute.pinscalers)
        for stored in store.in_namespace(key.namespace)
        if stored.key.cluster == key.cluster
        and not (store is compute.store(kind) and stored.key == key)
        and stored.entity_ref
    }
    owners = {await entity_owner(info.context, ref) for ref in sorted(entities) if ref}
    return tuple(sorted(owner for owner in owners if owner))


def _host(body: dict[str, Any]) -> str | None:
    """A PinApp's ingress host (the CRD admits one spelling of each: lowercase, no final dot)."""
    host = ((body.get("spec") or {}).get("ingress") or {}).get("host")
    return host if isinstance(host, str) and host else None
