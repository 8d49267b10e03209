"""The deployments scenario's webhooks: GitHub ``deployment_status`` deliveries to Atrium and to
a floor, from a load process.

The deliveries are the recorded body of tests/fixtures/github, values set, signed, a fresh
delivery id each; each deploy ``in_progress`` then ``success`` or ``failure``, 16 connections
each sending its deliveries in order. Atrium runs under uvicorn with the deployments plugin
alone; the floor, on the same stack, reads the body and checks its signature, nothing else.
Rounds alternate the two; the floor gets each round's events ``FLOOR_REPEAT`` times, for
bursts of a comparable length.
"""

from __future__ import annotations

import asyncio
import hmac
import random
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import orjson
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from bench.bulk import connect
from bench.deployments_history import STAGES
from bench.harness.apps import atrium
from bench.harness.host import ROOT
from bench.harness.load import LoadResult, Reply, load_process, request_bytes, send_streams
from bench.harness.servers import Server, running_servers
from bench.harness.tables import print_rows
from bench.harness.timing import Throughput, rotated
from graph.settings import Settings
from plugins.deployments import DeploymentsPlugin
from plugins.deployments.service import sign
from plugins.deployments.settings import DeploymentSettings

__all__ = ["plugin", "post_events", "run_webhooks", "webhook_atrium", "webhook_floor"]

HOOK: Final = "/hooks/deployments/github"
CONNECTIONS: Final = 16
FLOOR_REPEAT: Final = 10  # the floor gets each round's events this many times: longer bursts
REPLY_TIMEOUT_S: Final = 60.0
SMOKE_EVENTS: Final = 8 * CONNECTIONS  # a group of four deploys a connection (warm-up: one)
FIXTURE: Final = ROOT / "tests/fixtures/github/deployment_status.json"
_LANDED: Final = """
select count(*) filter (where outcome = 'applied'),
       (select count(*) from deployment_deploys where state in ('pending', 'in_progress'))
from deployment_events
"""

# deployment id, repository, stage, version, sha, created at; then the status and its time
Event = tuple[Any, ...]


def plugin(secret: str) -> DeploymentsPlugin:
    key = SecretStr(secret)
    return DeploymentsPlugin(
        DeploymentSettings(deployments_github_secret=key, deployments_webhook_secret=key)
    )


def webhook_atrium(database_url: str, secret: str) -> tuple[Any, str]:
    """Atrium with the deployments plugin alone (a ``bench.harness.serve`` factory)."""
    settings = Settings(database_url=database_url, redis_url=None, log_level="INFO")
    return atrium(settings, [plugin(secret)]), "INFO"


def webhook_floor(secret: str) -> tuple[Starlette, str]:
    """Reads the body and checks its signature as Atrium does; nothing else."""

    async def hook(request: Request) -> Response:
        body = await request.body()
        given = request.headers.get("x-hub-signature-256", "")
        return Response(status_code=200 if hmac.compare_digest(given, sign(secret, body)) else 401)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    routes = [Route(HOOK, hook, methods=["POST"]), Route("/healthz", healthz)]
    return Starlette(routes=routes), "WARNING"


def _request(port: int, secret: str, recorded: dict[str, Any], event: Event) -> bytes:
    """A ``deployment_status`` delivery as GitHub sends it: the recorded body, values set."""
    id, repository, stage, version, sha, created, state, at = event
    payload = {"version": version, "commit_time": created, "artifact": f"registry.example/{id}"}
    deployment = {"id": id, "sha": sha, "environment": stage, "original_environment": stage}
    deployment |= {"payload": payload, "created_at": created}
    status = {"state": state, "environment": stage, "created_at": at, "updated_at": at}
    repo = {"full_name": repository, "html_url": f"https://github.com/{repository}"}
    body = orjson.dumps(
        recorded
        | {
            "deployment": recorded["deployment"] | deployment,
            "repository": recorded["repository"] | repo,
        }
        | {"deployment_status": recorded["deployment_status"] | status}
    )
    headers = {"content-type": "application/json", "user-agent": "GitHub-Hookshot/5e0f3a1"}
    headers |= {"x-github-event": "deployment_status", "x-github-delivery": str(uuid.uuid4())}
    headers["x-hub-signature-256"] = sign(secret, body)
    return request_bytes("POST", HOOK, port, headers, body)


def _applied(reply: Reply) -> bool:
    """The floor answers nothing; Atrium what it did, which must be "applied"."""
    return reply.status == 200 and (not reply.body or b'"outcome":"applied"' in reply.body)


def post_events(port: int, secret: str, streams: list[list[Event]], pid: int) -> LoadResult:
    """The load process's job: each stream's deliveries in order on a connection of its own,
    the streams at once."""
    recorded = orjson.loads(FIXTURE.read_bytes())
    requests = [[_request(port, secret, recorded, e) for e in stream] for stream in streams]
    return asyncio.run(
        send_streams(
            port, requests, server_pid=pid, accept=_applied, reply_timeout_s=REPLY_TIMEOUT_S
        )
    )


def _events(
    rng: random.Random, repositories: list[str], count: int, first: int
) -> list[list[Event]]:
    """``count`` events, two per deploy; each connection sends its deploys in fours, each
    ``in_progress`` first, then how it ended."""
    streams: list[list[Event]] = [[] for _ in range(CONNECTIONS)]
    start = datetime.now(UTC) - timedelta(hours=1)
    for i in range(count // 2):
        at = start + timedelta(seconds=i // CONNECTIONS)
        head: Event = (first + i, rng.choice(repositories), rng.choice(STAGES), f"9.{first}.{i}")
        head += (f"{rng.getrandbits(160):040x}", at.isoformat())
        ended = "failure" if rng.random() < 0.05 else "success"
        stream = streams[i % CONNECTIONS]
        group = len(stream) // 8 * 8  # where this deploy's group of four begins
        stream.insert(group + (len(stream) - group) // 2, (*head, "in_progress", at.isoformat()))
        stream.append((*head, ended, (at + timedelta(seconds=90)).isoformat()))
    return streams


@dataclass(slots=True, kw_only=True)
class Receiver(Throughput):
    """A server the webhooks go to, and what it did with them."""

    server: Server

    @property
    def name(self) -> str:
        return self.server.name


async def run_webhooks(
    url: str, secret: str, repositories: list[str], seed: int, *, short: bool, smoke: bool = False
) -> None:
    """``rounds`` of ``events`` after a warm-up round of a quarter as many; ``smoke``: one
    round, each connection's stream a few deploys long."""
    rounds, events = (1, SMOKE_EVENTS) if smoke else (3, 800) if short else (5, 4_000)
    rng, first = random.Random(seed), 1_000_000_000  # above every generated deploy's id
    async with running_servers() as servers, load_process() as pool:
        floor = await servers.start("floor (Starlette, HMAC check)", webhook_floor, secret)
        atrium = await servers.start(f"Atrium POST {HOOK}", webhook_atrium, url, secret)
        print(
            f"\nwebhooks: {rounds} rounds of {events:,} deployment_status events to Atrium (the "
            f"floor: {FLOOR_REPEAT} times as many), {CONNECTIONS} keep-alive connections from a "
            f"load process, {len(repositories):,} repositories; uvicorn, one worker, httptools, "
            "uvloop"
        )
        receivers = [Receiver(server=floor), Receiver(server=atrium)]
        loop, sent_to_atrium = asyncio.get_running_loop(), 0
        for round_ in range(-1, rounds):  # round -1 warms both up
            streams = _events(rng, repositories, events // 4 if round_ < 0 else events, first)
            first += events
            for receiver in rotated(receivers, round_ + 1):
                server = receiver.server
                mine = streams if server is atrium else [s * FLOOR_REPEAT for s in streams]
                try:
                    args = (server.port, secret, mine, server.pid)
                    result = await loop.run_in_executor(pool, post_events, *args)
                except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
                    raise server.failure(f"the load failed: {exc!r}") from exc
                if result.failed:
                    raise server.failure(f"{result.failed} failed, e.g. {result.example[:600]!r}")
                sent_to_atrium += len(result.latencies) if server is atrium else 0
                if round_ >= 0:
                    receiver.add(result)
        conn = await connect(url)
        try:
            applied, flying = await conn.fetchrow(_LANDED)
        finally:
            await conn.close()
        if applied != sent_to_atrium or flying:
            raise atrium.failure(f"{applied} of {sent_to_atrium} events applied, {flying} flying")
    _print_webhooks(receivers, applied)


def _print_webhooks(figures: list[Receiver], applied: int) -> None:
    """``figures[0]`` is the floor."""
    floor, rows = figures[0], []
    for f in figures:
        cpu = f.server_cpu
        per_event = f.cpu_per_request
        rows.append(
            (
                f.name,
                *f.cells(floor, ratio=3),
                "-" if cpu is None else f"{cpu / f.seconds:.0%}",
                "-" if per_event is None else f"{per_event * 1000:.2f}",
            )
        )
    print()
    header = ("target", "events/s", "p50 ms", "p99 ms", "vs floor", "rounds")
    print_rows((*header, "server CPU", "CPU ms/event"), rows)
    print(
        f"answers: every one 200; Atrium applied all {applied:,} events (warm-up included) and "
        "left no deploy in flight; the floor checked every signature"
    )
    print(
        "vs floor: the median over rounds of events/s over the floor's in the same round "
        "(rounds: the lowest and the highest); latency: closed loop, queueing included; server "
        f"CPU: the server's process, PostgreSQL's apart; load process: at most "
        f"{max(f.client_cpu for f in figures):.0%} of a core in any burst"
    )
