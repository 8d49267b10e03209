"""Kubernetes names from clients are checked before they reach a cluster (emulated, over HTTP,
kubernetes-asyncio as in production): a pod's log asked for with a namespace, pod or container
that is not a Kubernetes name (``..`` and ``.``, which the client resolves into another path,
``/``, ``?``, ``#``, ``%``, control characters, a trailing newline, too long) is BAD_USER_INPUT
and no request leaves, over HTTP and over a websocket; a manifest naming its object so is
refused before anything is created."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from plugins.pincompute.names import InvalidName, check_label, check_subdomain
from tests.plugins.test_pincompute import APPLY, Env, env, pinapp

__all__ = ["env"]  # the fixture, shared with the module it comes from

LOGS = """query($n: String!, $p: String!, $c: String) {
  podLogs(cluster: "east", namespace: $n, pod: $p, container: $c) { text } }"""
TAIL = """subscription($n: String!, $p: String!, $c: String) {
  podLogTail(cluster: "east", namespace: $n, pod: $p, container: $c) }"""
# (namespace, pod, container): each once with the other two valid.
NOT_NAMES = [
    ("..", "checkout-abc", None),  # read /api/v1/pods/checkout-abc/log before
    ("shop", "..", None),  # read /api/v1/namespaces/shop/log
    ("shop", ".", None),  # read /api/v1/namespaces/shop/pods/log
    ("shop", "a/b", None),
    ("shop", "a?b=1", None),
    ("shop", "a#b", None),
    ("shop", "%2e%2e", None),
    ("shop", "Ä\x18K", None),
    ("shop", "checkout-abc\n", None),
    ("shop", "Checkout-abc", None),
    ("shop", "a" * 254, None),
    ("shop\n", "checkout-abc", None),
    ("s" * 64, "checkout-abc", None),
    ("shop", "checkout-abc", ".."),
    ("shop", "checkout-abc", "app&previous=true"),
    ("shop", "checkout-abc", "a" * 64),
]


def log_requests(env: Env) -> list[Any]:
    return [r for r in env.east.requests if "/log" in r.path or r.path.endswith("/pods")]


@pytest.mark.parametrize(("namespace", "pod", "container"), NOT_NAMES)
async def test_a_pods_log_is_asked_for_by_kubernetes_names_only(
    env: Env, namespace: str, pod: str, container: str | None
) -> None:
    env.east.pod_log("shop", "checkout-abc", "ready\n")
    variables = {"n": namespace, "p": pod, "c": container}
    before = len(log_requests(env))
    body = await env.client.gql(LOGS, variables, expect_errors=True)
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert "must be a Kubernetes name" in error["message"]
    async with env.client.websocket() as ws:
        await ws.subscribe("1", TAIL, variables)
        [answer, done] = (await ws.settle(["1"]))["1"]
    [error] = answer["payload"]["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", answer
    assert done == {"id": "1", "type": "complete"}
    assert len(log_requests(env)) == before  # nothing went to the cluster
    # The same names, valid, read the log.
    body = await env.client.gql(LOGS, {"n": "shop", "p": "checkout-abc", "c": "app"})
    assert body["data"]["podLogs"]["text"] == "ready\n"


@pytest.mark.parametrize(
    ("field", "value"),
    [("namespace", "shop\n"), ("name", "payments\n"), ("name", "pay..ments"), ("name", "..")],
)
async def test_a_manifest_names_its_object_by_kubernetes_names(
    env: Env, field: str, value: str
) -> None:
    body = pinapp("payments", "component:checkout") | {"status": {}}
    body["metadata"][field] = value
    before = len(env.east.requests)
    refused = await env.client.gql(
        APPLY, {"c": "east", "m": yaml.safe_dump(body)}, user="alice", expect_errors=True
    )
    [error] = refused["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert f"metadata.{field}: must be a lowercase DNS" in error["message"]
    assert [r for r in env.east.requests[before:] if r.method == "POST"] == []


def test_names_as_kubernetes_spells_them() -> None:
    assert check_label("namespace", "shop-2") == "shop-2"
    assert check_subdomain("pod", "checkout-6b7f9.x-2") == "checkout-6b7f9.x-2"
    assert check_subdomain("pod", "a" * 100) == "a" * 100  # a subdomain's parts may be long
    for bad in ("", "-a", "a-", "A", "a.b", "a_b", "a\n", "a" * 64):
        with pytest.raises(InvalidName, match="namespace must be a Kubernetes name"):
            check_label("namespace", bad)
    for bad in ("", ".", "..", "a..b", ".a", "a.", "a/b", "a\n", "a" * 254):
        with pytest.raises(InvalidName, match="pod must be"):
            check_subdomain("pod", bad)
