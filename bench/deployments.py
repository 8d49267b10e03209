"""The deployments scenario: the deployments plugin over a catalog with a long deploy history.

A fifth of the catalog's components get deploys (4 per catalog entity by default, skewed: a few
components have thousands) over 90 days: releases go to canary, staging, then production and
stop where one fails; production failures are mostly redeployed at once, a few releases rolled
back. The rows are COPYed into the plugin's tables (indexes dropped and rebuilt, as
``bench.generate`` does); one deployed component in ten gets a ``github.com/project-slug``.
Timed: the component page (pipeline, last 20 deploys) of the component with the most deploys
and 90 days of DORA figures of the group owning the most deployed components, in process
against a plain endpoint answering the same bytes (``bench.harness``), response cache off; and
webhook ingestion: GitHub ``deployment_status`` deliveries (the recorded body of
tests/fixtures/github, signed, a fresh delivery id each) from a load process over 16
connections, each deploy ``in_progress`` then ``success`` or ``failure``, to Atrium under
uvicorn and to a floor on the same stack that only checks the signature, rounds alternating.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import hmac
import itertools
import logging
import os
import random
import secrets
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import orjson
import uvicorn
from pydantic import SecretStr
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from atrium.app import create_app
from atrium.cli import listening_socket, uvicorn_options
from bench.database import scratch_database
from bench.explain import explain_slowest
from bench.generate import _CONSTRAINTS, _INDEXES, _connect, _copy, _execute, _parallel, generate
from bench.harness import Measurement, _percentile, measure
from bench.report import _print_rows, _queries, print_explain, print_load
from bench.run import Options
from bench.scenarios import Check, Scenario
from bench.serving import _load_process
from bench.serving_load import LoadResult, _cpu_seconds, _read_reply, request_bytes
from bench.serving_procs import running_servers
from bench.serving_report import Figures, Target
from graph.logs import configure_logging
from graph.settings import Settings
from plugins.deployments import DeploymentsPlugin
from plugins.deployments.service import sign
from plugins.deployments.settings import DeploymentSettings

__all__ = ["post_events", "run_deployments"]

STAGES: Final = ("canary", "staging", "production")
FAILS: Final = {"canary": 0.08, "staging": 0.05, "production": 0.04}
REDEPLOYED: Final = 0.7  # production failures redeployed at once
ROLLED_BACK: Final = 0.02  # production successes a rollback replaces
ACTORS: Final = ("github-actions[bot]", "argo-cd", "alice", "bob", "carol", "dmitri")
SPAN: Final = 90 * 86_400.0  # seconds of history
TABLES: Final = ["deployment_releases", "deployment_deploys"]
# The columns the rows fill, named: any other takes its default, or what a trigger sets.
COLUMNS: Final = [
    "id component_ref version commit_sha commit_time artifact created_by created_at build_url",
    "id component_ref stage production release_id state actor started_at finished_at updated_at"
    " source external_id url is_rollback message",
]
SLUG: Final = "github.com/project-slug"
HOOK: Final = "/hooks/deployments/github"
CONNECTIONS: Final = 16
FLOOR_REPEAT: Final = 10  # the floor gets each round's events this many times: longer bursts
REPLY_TIMEOUT_S: Final = 60.0
FIXTURE: Final = Path(__file__).parent.parent / "tests/fixtures/github/deployment_status.json"

COMPONENT_PAGE: Final = """
query ComponentDeploys($ref: String!) {
  entity(ref: $ref) {
    ... on Component {
      pipeline { stages { name current { id state release { version } } latest { id state }
                          waiting { version } } }
      deployments(first: 20) { totalCount edges { node {
        id state stage actor startedAt finishedAt isRollback
        release { version commitSha artifact } } } }
    }
  }
}
"""
TEAM_DORA: Final = """
query TeamDora($team: String!) {
  entity(ref: $team) {
    ... on Group { dora(days: 90) { deploys deploysPerDay leadTimeSeconds changeFailureRate
                                    timeToRestoreSeconds failures } }
  }
}
"""
_LANDED: Final = """
select count(*) filter (where outcome = 'applied'),
       (select count(*) from deployment_deploys where state in ('pending', 'in_progress'))
from deployment_events
"""
_TEAM: Final = """
select owner_ref, count(*) as count from entities where ref = any($1::text[])
  and owner_ref like 'group:%' group by owner_ref order by count desc, owner_ref limit 1
"""

# --- The history. ---------------------------------------------------------------------------

Step = tuple[str, str, bool]  # stage, state, whether it is a rollback


def _plan(rng: random.Random, deploys: int) -> list[list[Step]]:
    """Releases, each the deploys it made, ``deploys`` in all."""
    plans: list[list[Step]] = []
    made, shipped = 0, False
    while made < deploys:
        steps: list[Step] = []
        for stage in STAGES:
            failed = rng.random() < FAILS[stage]
            steps.append((stage, "failed" if failed else "succeeded", False))
            if failed and (stage != "production" or rng.random() > REDEPLOYED):
                break
            if failed:
                steps.append((stage, "succeeded", False))
            elif stage == "production" and shipped and rng.random() < ROLLED_BACK:
                steps[-1] = (stage, "rolled_back", False)
                steps.append((stage, "succeeded", True))
        shipped = shipped or steps[-1][:2] == ("production", "succeeded")
        made += len(steps)
        plans.append(steps)
    plans[-1] = plans[-1][: len(plans[-1]) - (made - deploys)]
    return plans


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _history(
    rng: random.Random, ref: str, deploys: int, now: float, ids: list[int], rows: list[list[Any]]
) -> None:
    """One component's releases, evenly over SPAN, and their deploys."""
    name = ref.partition("/")[2]
    plans = _plan(rng, deploys)
    slot = SPAN / len(plans)
    gap = min(slot, 4 * 3600.0) / 8  # a release's deploys end within its slot
    good: int | None = None  # the release production last ran successfully
    for k, steps in enumerate(plans):
        ids[0] += 1
        release, version = ids[0], f"1.{k // 1000}.{k % 1000}"
        at = now - SPAN + k * slot + rng.random() * gap
        commit = _at(at - rng.uniform(600, 2 * 86_400))
        sha, artifact = f"{rng.getrandbits(160):040x}", f"registry.example/{name}:{version}"
        rows[0].append((release, ref, version, sha, commit, artifact, ACTORS[0], _at(at), None))
        for stage, state, rollback in steps:
            at += gap * (0.5 + rng.random())
            done, ids[1] = _at(at + rng.uniform(30, min(600, gap / 2))), ids[1] + 1
            row: tuple[Any, ...] = (ids[1], ref, stage, stage == "production", release, state)
            if rollback and good is not None:
                row = (*row[:4], good, state)
            row += (rng.choice(ACTORS), _at(at), done, done, "github", str(ids[1]))
            row += (f"https://github.com/acme/{name}/actions/runs/{ids[1]}", rollback)
            rows[1].append((*row, "health checks failed" if state == "failed" else None))
            if stage == "production" and state == "succeeded" and not rollback:
                good = release


@dataclass(slots=True)
class History:
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    releases: int = 0
    slugs: list[str] = field(default_factory=list)  # repositories that name a component
    steps: dict[str, float] = field(default_factory=dict)


async def generate_history(url: str, total: int, seed: int) -> History:
    history, clock = History(), time.perf_counter()

    def lap(step: str) -> None:
        nonlocal clock
        history.steps[step], clock = time.perf_counter() - clock, time.perf_counter()

    conns = [await _connect(url) for _ in range(3)]
    db = conns[0]
    try:
        sql = "select ref from entities where kind = 'Component' order by ref"
        refs = [r[0] for r in await db.fetch(sql)]
        rng = random.Random(seed)
        chosen = rng.sample(refs, max(1, len(refs) // 5))
        weights = list(itertools.accumulate(1 / (rank + 1) ** 0.7 for rank in range(len(chosen))))
        history.counts.update(rng.choices(chosen, cum_weights=weights, k=total))
        rows: list[list[Any]] = [[], []]
        ids, now = [0, 0], time.time()
        gc.disable()  # a million rows, none of them garbage
        try:
            for ref, count in sorted(history.counts.items()):
                _history(rng, ref, count, now, ids, rows)
        finally:
            gc.enable()
        history.releases = len(rows[0])
        lap("rows")
        # Without indexes, then each table's rebuilt: releases first, so that what the
        # deploys' triggers look up in them is indexed, as for the app's own writes.
        constraints = await db.fetch(_CONSTRAINTS, TABLES)
        foreign = [c for c in constraints if c["foreign"]]
        built = [*(c for c in constraints if not c["foreign"]), *await db.fetch(_INDEXES, TABLES)]
        for found in (*foreign, *built):
            await db.execute(found["drop"])
        for table, records, columns in zip(TABLES, rows, COLUMNS, strict=True):
            chunks = [records[i : i + 100_000] for i in range(0, len(records), 100_000)]
            await _parallel(conns, [_copy(table, chunk, columns.split()) for chunk in chunks])
            mine = [_execute(found["create"]) for found in built if found["table_name"] == table]
            await _parallel(conns, mine)
            sequence = f"pg_get_serial_sequence('{table}', 'id')"
            await db.execute(f"select setval({sequence}, max(id)) from {table}")
            lap(f"{table.removeprefix('deployment_')} copied and indexed")
        del rows, chunks
        for found in foreign:
            await db.execute(found["create"])
        slugged = rng.sample(sorted(history.counts), max(1, len(history.counts) // 10))
        history.slugs = [
            r[0]
            for r in await db.fetch(
                "update entities set annotations = annotations || jsonb_build_object($2::text,"
                " 'acme/' || namespace || '-' || name) where ref = any($1::text[])"
                " returning annotations ->> $2",
                slugged,
                SLUG,
            )
        ]
        for table in [*TABLES, "entities"]:
            await db.execute(f"vacuum (analyze) {table}")
        lap("vacuum analyze")
    finally:
        for conn in conns:
            await conn.close()
    return history


# --- The webhooks: servers, load, figures. --------------------------------------------------

# deployment id, repository, stage, version, sha, created at; then the status and its time
Event = tuple[Any, ...]


def _plugin(secret: str) -> DeploymentsPlugin:
    key = SecretStr(secret)
    return DeploymentsPlugin(
        DeploymentSettings(deployments_github_secret=key, deployments_webhook_secret=key)
    )


def floor_app(secret: str) -> Starlette:
    """Reads the body and checks its signature as Atrium does; nothing else."""

    async def hook(request: Request) -> Response:
        body = await request.body()
        given = request.headers.get("x-hub-signature-256", "")
        return Response(status_code=200 if hmac.compare_digest(given, sign(secret, body)) else 401)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(routes=[Route(HOOK, hook, methods=["POST"]), Route("/healthz", healthz)])


def serve(argv: list[str]) -> None:
    """``atrium DATABASE_URL SECRET`` or ``floor SECRET``, served as bench.serving_server does
    (one worker, uvloop and httptools, the port printed first on stdout)."""
    app: Starlette = floor_app(argv[-1])
    if argv[0] == "atrium":
        settings = Settings(database_url=argv[1], redis_url=None, log_level="INFO")
        app = create_app(settings, plugins=[_plugin(argv[2])])
    configure_logging("INFO" if argv[0] == "atrium" else "WARNING")
    sock = listening_socket("127.0.0.1", 0)
    print(sock.getsockname()[1], flush=True)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    uvicorn.Server(uvicorn.Config(app, lifespan="on", **uvicorn_options())).run(sockets=[sock])


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


async def _send(
    streams: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    requests: list[bytes],
    result: LoadResult,
) -> None:
    reader, writer = streams
    try:
        for request in requests:
            began = time.perf_counter()
            writer.write(request)
            reply = await asyncio.wait_for(_read_reply(reader), REPLY_TIMEOUT_S)
            result.latencies.append(time.perf_counter() - began)
            # The floor answers nothing; Atrium what it did, which must be "applied".
            if reply.status != 200 or (reply.body and b'"outcome":"applied"' not in reply.body):
                result.failed += 1
                result.example = result.example or reply.head + reply.body
    finally:
        writer.close()


async def _post(port: int, secret: str, streams: list[list[Event]], pid: int) -> LoadResult:
    recorded = orjson.loads(FIXTURE.read_bytes())
    requests = [[_request(port, secret, recorded, e) for e in stream] for stream in streams]
    opened = await asyncio.gather(*(asyncio.open_connection("127.0.0.1", port) for _ in requests))
    result, server, client = LoadResult(), _cpu_seconds(pid), time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(_send(c, r, result) for c, r in zip(opened, requests, strict=True)))
    result.seconds, after = time.perf_counter() - started, _cpu_seconds(pid)
    result.client_cpu = time.process_time() - client
    result.server_cpu = after - server if after is not None and server is not None else None
    return result


def post_events(port: int, secret: str, streams: list[list[Event]], pid: int) -> LoadResult:
    """The load process's entry point (a ``ProcessPoolExecutor`` job): each stream's
    deliveries in order on a connection of its own, the streams at once."""
    return asyncio.run(_post(port, secret, streams, pid))


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


async def _webhooks(url: str, secret: str, repositories: list[str], seed: int, short: bool) -> None:
    rounds, events = (3, 800) if short else (5, 4_000)
    rng, first = random.Random(seed), 1_000_000_000  # above every generated deploy's id
    async with running_servers() as servers, _load_process() as pool:
        floor = await servers.start(
            "floor (Starlette, HMAC check)", "floor", secret, module="bench.deployments"
        )
        atrium = await servers.start(
            f"Atrium POST {HOOK}", "atrium", url, secret, module="bench.deployments"
        )
        print(
            f"\nwebhooks: {rounds} rounds of {events:,} deployment_status events to Atrium (the "
            f"floor: {FLOOR_REPEAT} times as many), {CONNECTIONS} keep-alive connections from a "
            f"load process, {len(repositories):,} repositories; uvicorn, one worker, httptools, "
            "uvloop"
        )
        figures = [Figures(Target(s.name, None), s, b"", b"") for s in (floor, atrium)]
        loop, sent_to_atrium = asyncio.get_running_loop(), 0
        for round_ in range(-1, rounds):  # round -1 warms both up
            streams = _events(rng, repositories, events // 4 if round_ < 0 else events, first)
            first += events
            for figure in figures if round_ % 2 else figures[::-1]:
                server = figure.server
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
                    figure.add(result)
        conn = await _connect(url)
        try:
            applied, flying = await conn.fetchrow(_LANDED)
        finally:
            await conn.close()
        if applied != sent_to_atrium or flying:
            raise atrium.failure(f"{applied} of {sent_to_atrium} events applied, {flying} flying")
    _print_webhooks(figures, applied)


def _print_webhooks(figures: list[Figures], applied: int) -> None:
    """As ``bench.serving_report.print_figures``; ``figures[0]`` is the floor."""
    floor, rows = figures[0], []
    for f in figures:
        row: tuple[str, ...] = (f.target.name, f"{f.rps:,.0f}")
        row += tuple(f"{_percentile(f.latencies, p) * 1000:.2f}" for p in (50, 99))
        ratios = f.ratios(floor)
        row += (f"{f.versus(floor):.3f}", f"{min(ratios):.3f}-{max(ratios):.3f}")
        cpu = f.server_cpu
        row += (
            ("-", "-")
            if cpu is None
            else (f"{cpu / f.seconds:.0%}", f"{cpu * 1000 / len(f.latencies):.2f}")
        )
        rows.append(row)
    print()
    header = ("target", "events/s", "p50 ms", "p99 ms", "vs floor", "rounds")
    _print_rows((*header, "server CPU", "CPU ms/event"), rows)
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


# --- The pages. -----------------------------------------------------------------------------


def _page_check(expected: int) -> Check:
    def check(data: dict[str, Any]) -> list[str]:
        component = data.get("entity") or {}
        stages = (component.get("pipeline") or {}).get("stages") or []
        page = component.get("deployments") or {}
        problems = [f"stage {s['name']} runs nothing" for s in stages if not s.get("current")]
        if [s.get("name") for s in stages] != list(STAGES):
            problems.append(f"stages {[s.get('name') for s in stages]}")
        if page.get("totalCount") != expected or len(page.get("edges") or []) != min(20, expected):
            problems.append(f"{page.get('totalCount')} deploys, expected {expected} (20 shown)")
        return problems

    return check


def _dora_check(data: dict[str, Any]) -> list[str]:
    dora = (data.get("entity") or {}).get("dora") or {}
    problems = [] if dora.get("deploys") else ["no deploys"]
    if not 0 < (dora.get("changeFailureRate") or 0) < 0.5:
        problems.append(f"change failure rate {dora.get('changeFailureRate')}")
    if not (dora.get("leadTimeSeconds") or 0) > 0 or dora.get("timeToRestoreSeconds") is None:
        problems.append("no lead time or no time to restore")
    return problems


def _answer(body: bytes) -> str:
    entity = orjson.loads(body)["data"]["entity"]
    if "dora" in entity:
        d = entity["dora"]
        return (
            f"{d['deploys']:,} production deploys ({d['deploysPerDay']:.1f}/day), lead time "
            f"{d['leadTimeSeconds'] / 3600:.1f} h, {d['changeFailureRate']:.1%} failed, restored "
            f"in {d['timeToRestoreSeconds'] / 60:.0f} min (median)"
        )
    waiting = sum(len(s["waiting"]) for s in entity["pipeline"]["stages"])
    page = entity["deployments"]
    return f"{len(page['edges'])} of {page['totalCount']:,} deploys, {waiting} releases waiting"


def _print_table(results: list[Measurement]) -> None:
    """``bench.report.print_table``, with what these answers say."""
    rows = [
        (
            *(r.scenario.name, f"{r.median:.2f}", f"{r.p95:.2f}", f"{r.baseline_median:.2f}"),
            *(f"{r.ratio:.1f}x", _queries(r.queries), f"< {r.scenario.target_ms:g} ms"),
            "PASS" if r.passed else "MISS",
        )
        for r in results
    ]
    header = ("scenario", "median ms", "p95 ms", "baseline median ms", "ratio", "SQL/req")
    print()
    _print_rows((*header, "target", "verdict"), rows)
    print(f"answers: {'; '.join(f'{r.scenario.name}: {_answer(r.body)}' for r in results)}")
    print(
        f"{min(len(r.app_ms) for r in results)} samples per scenario and baseline, sequential, "
        "after warm-up, response cache off; baseline: a plain Starlette endpoint returning the "
        "same bytes"
    )


async def run_deployments(options: Options, *, deploys: int, short: bool) -> None:
    started = time.perf_counter()
    logging.getLogger("atrium").setLevel(logging.WARNING)
    secret = secrets.token_hex(16)
    async with scratch_database() as scratch:
        print(f"\ndeployments: scratch database {scratch.name} on the {scratch.server}")
        app = create_app(
            Settings(database_url=scratch.url, response_cache=False), plugins=[_plugin(secret)]
        )
        async with app.router.lifespan_context(app):  # the plugin's migration too
            print_load(await generate(scratch.url, options.entities, seed=options.seed))
            history = await generate_history(scratch.url, deploys, options.seed)
            steps = ", ".join(f"{step} {s:.1f} s" for step, s in history.steps.items())
            print(
                f"deploy history: {history.counts.total():,} deploys of {history.releases:,} "
                f"releases on {len(history.counts):,} components ({len(history.slugs):,} with "
                f"{SLUG}) over 90 days, generated in {sum(history.steps.values()):.1f} s ({steps})"
            )
            busiest, most = history.counts.most_common(1)[0]
            team = await app.state.services.database.fetchrow(_TEAM, list(history.counts))
            if team is None:
                raise LookupError("no group owns a deployed component")
            print(
                f"component page: {busiest} ({most:,} deploys); team DORA: {team['owner_ref']} "
                f"({team['count']} deployed components owned directly, more in its subgroups)"
            )
            page = Scenario(
                "component page", 20, COMPONENT_PAGE, {"ref": busiest}, _page_check(most)
            )
            dora = Scenario("team DORA, 90 days", 100, TEAM_DORA, {"team": team[0]}, _dora_check)
            gc.collect()
            gc.freeze()  # what was loaded lives for the run, as in bench.run
            try:
                rounds, warmup, budget_s = options.rounds, options.warmup, options.budget_s
                results = await measure(
                    app, [page, dora], rounds=rounds, warmup=warmup, budget_s=budget_s
                )
            finally:
                gc.unfreeze()
            _print_table(results)
            for result in results:
                if options.explain_all or not result.passed:
                    statements, plan = await explain_slowest(app, result.scenario)
                    print_explain(result.scenario.name, statements, plan)
        await _webhooks(scratch.url, secret, history.slugs, options.seed, short)
    print(f"\ndeployments took {time.perf_counter() - started:.0f} s; scratch database dropped")


if __name__ == "__main__":  # a server of the webhook scenario: see ``serve``
    serve(sys.argv[1:])
