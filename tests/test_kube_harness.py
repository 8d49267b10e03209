"""The Kubernetes test harness (tests/kube.py), driven by kubernetes-asyncio as the plugin will be.

Two emulated clusters, one kubeconfig, one ApiClient per context, real HTTP on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from plugins.pincompute.emulator import GROUP, VERSION
from tests.kube import Cluster, api_clients, kubeconfig, start_clusters

T = TypeVar("T")
NS = "apps"
MERGE_PATCH = "application/merge-patch+json"


def pinapp(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


@pytest.fixture(params=[False, True], ids=["test-loop", "own-process"])
async def clusters(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Cluster, Cluster]]:
    """The clusters on the test's loop, and in processes of their own (what the harness does
    is the same either way)."""
    async with start_clusters("east", "west", own_process=request.param) as (east, west):
        yield east, west


@pytest.fixture
async def apis(clusters: tuple[Cluster, Cluster]) -> AsyncIterator[dict[str, ApiClient]]:
    async with api_clients(kubeconfig(*clusters)) as clients:
        yield clients


def custom(apis: dict[str, ApiClient], name: str) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(apis[name])


async def next_event(events: asyncio.Queue[T]) -> T:
    async with asyncio.timeout(5):
        return await events.get()


async def timed(awaitable: Awaitable[T]) -> tuple[float, T | BaseException]:
    """How long an awaitable took, and its result or the exception it raised."""
    started = time.monotonic()
    try:
        result: T | BaseException = await awaitable
    except Exception as error:
        result = error
    return time.monotonic() - started, result


async def test_kubeconfig_names_every_cluster_as_a_context(
    clusters: tuple[Cluster, Cluster],
) -> None:
    east, west = clusters
    config = kubeconfig(east, west)

    assert [c["name"] for c in config["contexts"]] == ["east", "west"]
    assert config["current-context"] == "east"
    servers = {c["name"]: c["cluster"]["server"] for c in config["clusters"]}
    assert servers == {"east": east.url, "west": west.url}
    assert east.url.startswith("http://127.0.0.1:") and east.url != west.url
    assert {u["name"]: u["user"]["token"] for u in config["users"]} == {
        "east": "token-east",
        "west": "token-west",
    }


async def test_each_context_lists_its_own_cluster(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    east, west = clusters
    await east.put("pinapps", NS, pinapp("a", image="nginx"))
    await east.put("pinapps", NS, pinapp("b"))
    await west.put("pinapps", NS, pinapp("c"))

    east_list = await custom(apis, "east").list_namespaced_custom_object(
        GROUP, VERSION, NS, "pinapps"
    )
    west_list = await custom(apis, "west").list_namespaced_custom_object(
        GROUP, VERSION, NS, "pinapps"
    )

    assert sorted(item["metadata"]["name"] for item in east_list["items"]) == ["a", "b"]
    assert [item["metadata"]["name"] for item in west_list["items"]] == ["c"]
    assert east_list["items"][0]["apiVersion"] == f"{GROUP}/{VERSION}"
    assert east_list["items"][0]["kind"] == "PinApp"
    # Lists carry a resourceVersion to watch from (the emulator stamps one per write).
    assert east_list["metadata"]["resourceVersion"] == "2"
    # Only what the client sent is recorded (the harness's puts are not), with its credentials.
    [sent] = east.requests
    assert (sent.method, sent.path) == ("GET", f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/pinapps")
    assert sent.headers["authorization"] == "Bearer token-east"
    assert west.requests[0].headers["Authorization"] == "Bearer token-west"


async def test_a_large_list_crosses_the_relay_intact(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    """Hundreds of kilobytes: more than the relay's socket buffers hold at once."""
    east, _ = clusters
    for index in range(100):
        await east.put("pinapps", NS, pinapp(f"app-{index:03}", blob=f"{index:03}" * 2000))

    listing = await custom(apis, "east").list_namespaced_custom_object(
        GROUP, VERSION, NS, "pinapps"
    )

    assert sorted(item["metadata"]["name"] for item in listing["items"]) == [
        f"app-{index:03}" for index in range(100)
    ]
    assert all(
        item["spec"]["blob"] == item["metadata"]["name"][-3:] * 2000 for item in listing["items"]
    )


async def test_put_replaces_an_existing_object_and_keeps_server_metadata(
    clusters: tuple[Cluster, Cluster],
) -> None:
    east, _ = clusters
    created = await east.put("pinapps", NS, pinapp("a", image="nginx", replicas=1))
    replaced = await east.put("pinapps", NS, pinapp("a", image="httpd"))

    assert replaced["spec"] == {"image": "httpd"}  # replicas removed, not merged
    assert replaced["metadata"]["uid"] == created["metadata"]["uid"]
    assert int(replaced["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"]
    )
    assert east.objects("pinapps") == [replaced]
    assert east.get("pinapps", NS, "a") == replaced
    await east.delete("pinapps", NS, "a")
    assert east.objects("pinapps") == [] and east.get("pinapps", NS, "a") is None


async def test_watch_sees_what_changes_while_it_is_open(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    east, _ = clusters
    await east.put("pinapps", NS, pinapp("a", replicas=1))
    api = custom(apis, "east")
    listing = await api.list_namespaced_custom_object(GROUP, VERSION, NS, "pinapps")
    events: asyncio.Queue[tuple[str, str, Any]] = asyncio.Queue()
    watcher = watch.Watch()

    async def consume() -> None:
        async with watcher:
            async for event in watcher.stream(
                api.list_namespaced_custom_object,
                GROUP,
                VERSION,
                NS,
                "pinapps",
                resource_version=listing["metadata"]["resourceVersion"],
                allow_watch_bookmarks=True,
                timeout_seconds=30,
            ):
                obj = event["raw_object"]
                await events.put((event["type"], obj["metadata"]["name"], obj.get("spec")))

    task = asyncio.create_task(consume())
    try:
        await east.wait_for_watches("pinapps")
        # The emulator replays existing objects as ADDED, whatever resourceVersion was asked for.
        assert await next_event(events) == ("ADDED", "a", {"replicas": 1})

        await east.put("pinapps", NS, pinapp("b", replicas=2))
        assert await next_event(events) == ("ADDED", "b", {"replicas": 2})
        await east.modify("pinapps", NS, "b", {"spec": {"replicas": 3}})
        assert await next_event(events) == ("MODIFIED", "b", {"replicas": 3})
        await east.put("pinapps", "elsewhere", pinapp("x"))  # another namespace: not this watch's
        await east.delete("pinapps", NS, "a")
        assert await next_event(events) == ("DELETED", "a", {"replicas": 1})
        assert events.empty()
        # kubernetes-asyncio follows the resourceVersions the emulator stamps on writes.
        assert watcher.resource_version == east.resource_version
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    [sent] = [request for request in east.requests if request.is_watch]
    # As sent by the client (the emulator sees watch=true): assert these, the emulator ignores them.
    assert sent.query["watch"] == "True"
    assert sent.query["resourceVersion"] == listing["metadata"]["resourceVersion"]
    assert sent.query["allowWatchBookmarks"] == "True"
    assert sent.query["timeoutSeconds"] == "30"


async def test_watch_ends_when_its_timeout_seconds_pass(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    east, _ = clusters
    await east.put("pinapps", NS, pinapp("a"))
    api = custom(apis, "east")
    started = time.monotonic()
    async with watch.Watch() as watcher:
        seen = [
            event["type"]
            async for event in watcher.stream(
                api.list_namespaced_custom_object, GROUP, VERSION, NS, "pinapps", timeout_seconds=1
            )
        ]
    assert seen == ["ADDED"]
    assert 0.9 < time.monotonic() - started < 3


@pytest.mark.parametrize("as_http_status", [False, True], ids=["error-event", "http-410"])
async def test_scripted_gone_fails_the_next_watch_once(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient], as_http_status: bool
) -> None:
    east, west = clusters
    await east.put("pinapps", NS, pinapp("a"))
    await west.put("pinapps", NS, pinapp("w"))
    east.fail_next_watch_with_gone("pinapps", as_http_status=as_http_status)

    async def first_event(api: client.CustomObjectsApi) -> str:
        async with watch.Watch() as watcher:
            async for event in watcher.stream(
                api.list_namespaced_custom_object,
                GROUP,
                VERSION,
                NS,
                "pinapps",
                resource_version="1",
                timeout_seconds=5,
            ):
                return str(event["raw_object"]["metadata"]["name"])
        raise AssertionError("the watch ended without an event")

    assert await first_event(custom(apis, "west")) == "w"  # the other cluster is not affected
    with pytest.raises(ApiException) as gone:
        await first_event(custom(apis, "east"))
    assert gone.value.status == 410
    assert await first_event(custom(apis, "east")) == "a"  # one shot: the next watch works


async def test_without_timeout_seconds_the_client_retries_one_gone_by_itself(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    """kubernetes-asyncio's Watch reconnects once on a 410 when it watches 'forever'."""
    east, _ = clusters
    await east.put("pinapps", NS, pinapp("a"))
    api = custom(apis, "east")

    async def first_event() -> str:
        async with watch.Watch() as watcher:
            async for event in watcher.stream(
                api.list_namespaced_custom_object, GROUP, VERSION, NS, "pinapps"
            ):
                return str(event["type"])
        raise AssertionError("the watch ended without an event")

    east.fail_next_watch_with_gone("pinapps")
    assert await first_event() == "ADDED"  # the 410 never reached the caller...
    assert len([request for request in east.requests if request.is_watch]) == 2  # ...it reconnected

    east.fail_next_watch_with_gone("pinapps")
    east.fail_next_watch_with_gone("pinapps")
    with pytest.raises(ApiException) as gone:
        await first_event()
    assert gone.value.status == 410


async def test_create_returns_the_created_object(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    east, _ = clusters
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PinApp", **pinapp("a", image="nginx")}

    created = await custom(apis, "east").create_namespaced_custom_object(
        GROUP, VERSION, NS, "pinapps", body
    )

    assert created is not None, "kubernetes-asyncio reads a create's body only from a 201"
    assert created["spec"] == {"image": "nginx"}
    assert created["metadata"]["namespace"] == NS and created["metadata"]["uid"]
    assert east.get("pinapps", NS, "a") == created
    [sent] = east.requests
    assert (sent.method, sent.content_type, sent.json()) == ("POST", "application/json", body)


async def test_merge_patch_is_sent_as_merge_patch_and_applied(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    east, _ = clusters
    await east.put("pinapps", NS, pinapp("a", image="nginx", replicas=1))
    api = custom(apis, "east")

    patched = await api.patch_namespaced_custom_object(
        GROUP, VERSION, NS, "pinapps", "a", {"spec": {"replicas": 3}}, _content_type=MERGE_PATCH
    )

    assert patched["spec"] == {"image": "nginx", "replicas": 3}
    assert east.get("pinapps", NS, "a")["spec"] == {"image": "nginx", "replicas": 3}
    [sent] = east.requests
    assert (sent.method, sent.path) == (
        "PATCH",
        f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/pinapps/a",
    )
    assert sent.content_type == MERGE_PATCH
    assert sent.json() == {"spec": {"replicas": 3}}

    # Why the Content-Type must be asserted: left to itself, kubernetes-asyncio labels a dict
    # body as a JSON patch, which a real API server rejects and the emulator applies anyway.
    await api.patch_namespaced_custom_object(
        GROUP, VERSION, NS, "pinapps", "a", {"spec": {"replicas": 4}}
    )
    assert east.requests[-1].content_type == "application/json-patch+json"
    assert east.get("pinapps", NS, "a")["spec"]["replicas"] == 4


async def test_pods_list_and_their_canned_logs(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    east, _ = clusters
    await east.put(
        "pods",
        NS,
        {
            "metadata": {"name": "web-0", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]},
        },
    )
    east.pod_log(NS, "web-0", "starting\nready\n")
    core = client.CoreV1Api(apis["east"])

    pods = await core.list_namespaced_pod(NS, label_selector="app=web")
    log = await core.read_namespaced_pod_log("web-0", NS, container="web", tail_lines=10)

    assert [pod.metadata.name for pod in pods.items] == ["web-0"]
    assert pods.items[0].spec.containers[0].image == "nginx"
    assert log == "starting\nready\n"
    listed, read = east.requests
    assert listed.query == {"labelSelector": "app=web"}  # sent; the emulator ignores selectors
    assert read.path == f"/api/v1/namespaces/{NS}/pods/web-0/log"
    assert read.query == {"container": "web", "tailLines": "10"}
    with pytest.raises(ApiException) as missing:
        await core.read_namespaced_pod_log("web-1", NS)
    assert missing.value.status == 404


async def test_json_log_lines_come_back_raw_only_without_preloading(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    """kubernetes-asyncio json-decodes a log that parses as JSON, then str()s it as Python."""
    east, _ = clusters
    east.pod_log(NS, "api-0", '{"level": "info"}\n')
    core = client.CoreV1Api(apis["east"])

    assert await core.read_namespaced_pod_log("api-0", NS) == "{'level': 'info'}"
    response = await core.read_namespaced_pod_log("api-0", NS, _preload_content=False)
    async with response:
        assert await response.read() == b'{"level": "info"}\n'


async def test_followed_log_streams_lines_as_they_are_written(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    east, _ = clusters
    log = east.pod_log(NS, "web-0", "first\n")
    core = client.CoreV1Api(apis["east"])
    lines: asyncio.Queue[str | None] = asyncio.Queue()

    async def follow() -> None:
        # Watch picks `follow=True` for read_namespaced_pod_log and yields raw lines.
        async with watch.Watch() as watcher:
            async for line in watcher.stream(
                core.read_namespaced_pod_log, "web-0", NS, _request_timeout=(1, 5)
            ):
                await lines.put(line)
        await lines.put(None)

    task = asyncio.create_task(follow())
    try:
        assert await next_event(lines) == "first\n"
        log.write("second\n")
        assert await next_event(lines) == "second\n"
        log.finish()  # the container exits: the stream ends
        assert await next_event(lines) is None
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    [sent] = east.requests
    assert sent.query == {"follow": "True"}


async def test_a_dark_cluster_times_out_while_the_other_answers(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    east, west = clusters
    await east.put("pinapps", NS, pinapp("a"))
    await east.go_dark()

    def listing(name: str) -> Awaitable[Any]:
        return custom(apis, name).list_namespaced_custom_object(
            GROUP, VERSION, NS, "pinapps", _request_timeout=(1, 2)
        )

    (east_took, east_result), (west_took, west_result) = await asyncio.gather(
        timed(listing("east")), timed(listing("west"))
    )

    assert isinstance(
        east_result, asyncio.TimeoutError
    )  # aiohttp's ServerTimeoutError: the read timeout
    assert 1.9 < east_took < 3.5
    assert isinstance(west_result, dict) and west_took < 1
    assert len(west.requests) == 1

    await east.resume()
    took, result = await timed(listing("east"))
    assert isinstance(result, dict) and [item["metadata"]["name"] for item in result["items"]] == [
        "a"
    ]
    assert took < 1


async def test_a_dark_cluster_freezes_an_open_watch(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    east, _ = clusters
    await east.put("pinapps", NS, pinapp("a"))
    api = custom(apis, "east")
    seen: list[str] = []

    async def consume() -> None:
        async with watch.Watch() as watcher:
            async for event in watcher.stream(
                api.list_namespaced_custom_object,
                GROUP,
                VERSION,
                NS,
                "pinapps",
                timeout_seconds=30,
                _request_timeout=(1, 1),
            ):
                seen.append(event["raw_object"]["metadata"]["name"])
                if len(seen) == 1:
                    await east.go_dark()
                    await east.put(
                        "pinapps", NS, pinapp("b")
                    )  # the harness still reaches the emulator

    took, result = await timed(consume())

    assert isinstance(result, asyncio.TimeoutError)
    assert seen == ["a"] and took < 3
    await east.resume()
    assert [obj["metadata"]["name"] for obj in east.objects("pinapps")] == ["a", "b"]


async def test_a_stopped_cluster_refuses_at_once_and_resumes_on_the_same_url(
    clusters: tuple[Cluster, Cluster], apis: dict[str, ApiClient]
) -> None:
    east, west = clusters
    await east.put("pinapps", NS, pinapp("a"))
    url = east.url
    await east.stop()

    took, result = await timed(
        custom(apis, "east").list_namespaced_custom_object(
            GROUP, VERSION, NS, "pinapps", _request_timeout=(1, 2)
        )
    )
    assert isinstance(result, aiohttp.ClientConnectorError) and took < 1
    assert (
        await custom(apis, "west").list_namespaced_custom_object(GROUP, VERSION, NS, "pinapps")
    )["items"] == []
    assert len(west.requests) == 1

    await east.resume()
    assert east.url == url
    listing = await custom(apis, "east").list_namespaced_custom_object(
        GROUP, VERSION, NS, "pinapps"
    )
    assert [item["metadata"]["name"] for item in listing["items"]] == ["a"]


LIST = """
import sys, urllib.request
request = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer token-east"})
print(urllib.request.urlopen(request, timeout=5).status)
"""


async def test_a_cluster_in_its_own_process_answers_another_while_the_test_blocks() -> None:
    async with start_clusters("east", own_process=True) as (east,):
        await east.put("pinapps", NS, pinapp("web", replicas=1))
        url = f"{east.url}/apis/{GROUP}/{VERSION}/namespaces/{NS}/pinapps"
        # Blocking on purpose: this thread and its event loop wait for the other process.
        done = subprocess.run(  # noqa: ASYNC221
            [sys.executable, "-c", LIST, url], capture_output=True, text=True, timeout=60
        )
        assert done.stdout.strip() == "200", done.stderr
        [sent] = east.requests
        assert sent.method == "GET" and sent.path.endswith("/pinapps")
