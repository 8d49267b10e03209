"""kubernetes-asyncio, imported when first used: its generated client takes about a quarter
of a second to import, which every ``atrium`` command would pay for on loading this plugin,
whether or not it talks to a cluster (``atrium migrate``, ``atrium token``, ``atrium schema``
never do). ``kube.ApiException``, ``kube.watch`` and the rest import it on first access, by
then a cluster is being connected or has answered."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubernetes_asyncio import config, watch
    from kubernetes_asyncio.client import ApiClient, CoreV1Api, CustomObjectsApi
    from kubernetes_asyncio.client.exceptions import ApiException

__all__ = ["ApiClient", "ApiException", "CoreV1Api", "CustomObjectsApi", "config", "watch"]

# Each name's module in kubernetes-asyncio, and its attribute there (None: the module itself).
_WHERE: dict[str, tuple[str, str | None]] = {
    "ApiClient": ("kubernetes_asyncio.client", "ApiClient"),
    "ApiException": ("kubernetes_asyncio.client.exceptions", "ApiException"),
    "CoreV1Api": ("kubernetes_asyncio.client", "CoreV1Api"),
    "CustomObjectsApi": ("kubernetes_asyncio.client", "CustomObjectsApi"),
    "config": ("kubernetes_asyncio.config", None),
    "watch": ("kubernetes_asyncio.watch", None),
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _WHERE[name]
    found = importlib.import_module(module)
    value = found if attribute is None else getattr(found, attribute)
    globals()[name] = value  # later lookups find it without this function
    return value
