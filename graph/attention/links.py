"""Console addresses, for answers that tell a person where to look (Backstage's scheme)."""

from __future__ import annotations

from urllib.parse import quote

__all__ = ["entity_href", "workload_href"]


def entity_href(ref: str, section: str | None = None) -> str:
    """``/catalog/{namespace}/{kind}/{name}`` of an entity, with ``#section`` when given
    (a section of its page: ``deployments``, ``alerts``)."""
    kind, _, rest = ref.partition(":")
    namespace, slash, name = rest.partition("/")
    if not slash:
        namespace, name = "default", rest
    path = "/catalog/" + "/".join(quote(part, safe="") for part in (namespace, kind, name))
    return f"{path}#{section}" if section else path


def workload_href(cluster: str, namespace: str, name: str) -> str:
    """``/workloads/{cluster}/{namespace}/{name}``, each part escaped (a cluster's name may
    hold spaces)."""
    return "/workloads/" + "/".join(quote(part, safe="") for part in (cluster, namespace, name))
