"""The demo organisation as the console tests use it, and the workloads of their cluster."""

from __future__ import annotations

from typing import Any

CHROMIUM = "/usr/bin/chromium"  # Debian's; `make test` installs it

CLUSTER = "east"
# The demo's checkout team owns checkout and cart-service; search-squad owns neither.
OWNER = "amelia.chen"
NOT_OWNER = "marcus.johnson"
COMPONENT = "checkout"
TEAM = "checkout-team"
# Scaled by a test: a workload of its own, so no other test sees its replicas change.
SCALED = ("shop", "cart-service")
# Alerts firing in the console tests' Alertmanager: on cart-service (the checkout team's) and
# on search (not theirs).
ALERTS = (
    {
        "labels": {"alertname": "CartErrors", "service": "cart-service", "severity": "page"},
        "annotations": {
            "summary": "9% of cart updates fail",
            "runbook_url": "https://runbooks.example/cart",
        },
    },
    {"labels": {"alertname": "SearchSlow", "service": "search", "severity": "ticket"}},
)


def pinapp(name: str, namespace: str, entity: str, replicas: int) -> dict[str, Any]:
    # No status.replicas (no controller runs here): the desired count is spec.replicas.
    return {
        "apiVersion": "compute.atrium.dev/v1",
        "kind": "PinApp",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"atrium.dev/entity-ref": entity},
        },
        "spec": {
            "image": f"registry.junipermarket.example/{name}:1.42.0",
            "replicas": replicas,
            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
        },
        "status": {"readyReplicas": replicas, "updatedReplicas": replicas},
    }
