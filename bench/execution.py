"""The execution scenario: the server's CPU per request, generic executor against compiled plan.

A persisted (or trusted) document runs on a compiled plan (``graph.plans``) once it has one;
any other runs on graphql-core's generic executor under Strawberry. This measures what the plan
saves, in process, on the same app and the same answers: the catalog of the serving scenario
(5,000 generated entities) in a scratch database, the core plugins, no Redis, the response
cache out of the way (``Services.execute`` is called directly, as the view calls it once no
kept answer was found). Three documents a console sends:

- the component page of the serving scenario (``bench.scenarios.COMPONENT_PAGE``);
- a team page: the component's owning team, its profile, parent, subgroups and members, and
  the components it owns through any subgroup, each with its owner and system (the console's
  ``TeamPage`` with a little more of each row);
- the catalog's list, 50 components a page (the console's ``CatalogList``).

Each document is first run on both paths until the loaders' in-process cache (L1) is warm and
the plan is built; the two answers must then be the same bytes, encoded as the HTTP view
encodes them. Timed: the process's CPU (``time.process_time``) over rounds of requests, each
with a fresh request context (``Services.context``) made inside the timed loop, rounds
alternating generic and compiled so the machine's drift hits both alike. Printed per document:
the median CPU per request of each path, per resolved field (every key of every object in the
answer, lists included), and the speed-up, generic over compiled.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from strawberry.types import ExecutionResult

from bench.catalog import SMALLEST
from bench.execution_documents import Document, documents
from bench.generate import generate
from bench.harness import BenchFailure
from bench.harness.apps import quiet, started
from bench.harness.database import scratch_database
from bench.harness.tables import print_rows, print_target
from bench.harness.timing import frozen_heap
from bench.request_path import WARMUP as REQUEST_WARMUP
from bench.request_path import print_whole_request, whole_request
from graph.http_output import result_outcome
from graph.plans import Plan
from graph.services import Services
from graph.settings import Settings
from sources.auth import Viewer

__all__ = ["run_execution"]

ENTITIES: Final = 5_000
MEDIA_TYPE: Final = "application/json"
VIEWER: Final = Viewer(None, "anonymous", frozenset({"read"}))
WARMUP: Final = 5  # runs of each path before anything is compared or timed
ROUND_S: Final = 0.2  # CPU seconds of generic requests per timed round (0.05 when short)
# --smoke: one round of a few requests per path and document, after one warm-up run each
# (the first generic run, before it, already filled the L1 and let the plan be built).
SMOKE_WARMUP: Final = 1
SMOKE_REQUESTS: Final = 2
SMOKE_WHOLE_WARMUP: Final = 2  # the first request builds the plan, the second runs on it
SMOKE_WHOLE_CALLS: Final = 5
GOAL: Final = ("component page", 4.0)  # the document, and how much faster compiled must be


@dataclass(slots=True)
class Timing:
    document: Document
    body: bytes  # the answer, the same from both paths
    fields: int  # resolved fields per request
    requests: int = 0  # per round and path
    sql: dict[str, float] = field(default_factory=dict)  # statements per request, by path
    generic_us: list[float] = field(default_factory=list)  # CPU per request, one per round
    compiled_us: list[float] = field(default_factory=list)

    @property
    def generic(self) -> float:
        return statistics.median(self.generic_us)

    @property
    def compiled(self) -> float:
        return statistics.median(self.compiled_us)

    @property
    def speedup(self) -> float:
        return self.generic / self.compiled

    def round_speedups(self) -> list[float]:
        return [g / c for g, c in zip(self.generic_us, self.compiled_us, strict=True)]


async def run_execution(
    *, short: bool, seed: int, rounds: int | None = None, smoke: bool = False
) -> None:
    """``rounds`` overrides the number of timed rounds per document (5 when ``short``, else
    15); a short run also times shorter rounds. ``smoke``: one round of a few requests on the
    smallest catalog."""
    begun = time.perf_counter()
    quiet()
    rounds = rounds or (1 if smoke else 5 if short else 15)
    round_s = ROUND_S / 4 if short else ROUND_S
    warmup, entities = (SMOKE_WARMUP, SMALLEST) if smoke else (WARMUP, ENTITIES)
    async with scratch_database() as scratch:
        print(f"\nexecution: {scratch}")
        # No Redis: the loaders' cache is this process's memory (L1) alone.
        settings = Settings(database_url=scratch.url, redis_url=None, compiled_plans=True)
        async with started(settings) as app:
            services = app.services
            report = await generate(scratch.url, entities, seed=seed)
            chosen = await documents(services)
            print(
                f"{entities:,} entities generated in {report.seconds:.1f} s; "
                + "; ".join(f"{d.name}: {_describe(d)}" for d in chosen)
            )
            with frozen_heap():  # the loaded app lives for the run
                timings = [
                    await _prepare(services, d, round_s, warmup, SMOKE_REQUESTS if smoke else None)
                    for d in chosen
                ]
                for round_ in range(rounds):
                    for timing in timings:
                        await _round(services, timing, generic_first=round_ % 2 == 0)
            assert services.assembly.plans is not None
            runs = services.assembly.plans.runs
        # The component page again, as the whole request an app with no response cache serves.
        page = timings[0]
        whole = await whole_request(
            scratch.url,
            page.document.query,
            page.document.variables,
            page.fields,
            rounds=rounds,
            calls=SMOKE_WHOLE_CALLS if smoke else 100 if short else 500,
            warmup=SMOKE_WHOLE_WARMUP if smoke else REQUEST_WARMUP,
        )
    print_timings(timings, rounds)
    print(f"compiled plans answered {runs:,} requests in all, warm-ups included")
    print_whole_request(page.document.name, whole)
    print(f"\nexecution took {time.perf_counter() - begun:.0f} s; scratch database dropped")


def _describe(document: Document) -> str:
    ref = document.variables.get("ref")
    return str(ref) if ref is not None else f"first {document.variables['first']}"


Run = Callable[[], Awaitable[ExecutionResult | None]]


def _paths(services: Services, document: Document, plan: Plan) -> tuple[Run, Run]:
    """(generic, compiled): one request each, a fresh context made inside."""
    query, name, variables = document.query, document.operation_name, document.variables

    async def generic() -> ExecutionResult | None:
        context = await services.context(None, VIEWER)
        return await services.execute(query, variables, name, context=context)

    async def compiled() -> ExecutionResult | None:
        context = await services.context(None, VIEWER)
        return await plan.execute(context, variables)

    return generic, compiled


def _body(document: Document, path: str, result: ExecutionResult | None) -> bytes:
    if result is None:
        raise BenchFailure(
            f"execution: {document.name}: the plan left the request to the generic executor"
        )
    body = result_outcome(result, MEDIA_TYPE, None).body
    if result.errors or result.data is None:
        raise BenchFailure(f"execution: {document.name}, {path}: {body[:600]!r}")
    problems = document.check(result.data)
    if problems:
        raise BenchFailure(f"execution: {document.name}, {path}: {'; '.join(problems)}")
    return body


async def _prepare(
    services: Services, document: Document, round_s: float, warmup: int, requests: int | None
) -> Timing:
    """Warm both paths up (``warmup`` runs each), check they answer the same bytes, and size a
    round: ``requests``, or as many as take ``round_s``."""
    plans = services.assembly.plans
    if plans is None:
        raise BenchFailure("execution: compiled plans are off")
    context = await services.context(None, VIEWER)
    # The generic run first: a plan is learnt for a document that has validated.
    first = await services.execute(
        document.query, document.variables, document.operation_name, context=context
    )
    _body(document, "generic", first)
    plan = plans.learn(document.query, document.operation_name)
    if plan is None:
        raise BenchFailure(f"execution: {document.name}: no plan could be built")
    generic, compiled = _paths(services, document, plan)
    for _ in range(warmup):
        generic_body = _body(document, "generic", await generic())
        compiled_body = _body(document, "compiled", await compiled())
    if generic_body != compiled_body:
        raise BenchFailure(
            f"execution: {document.name}: the compiled answer differs from the generic one\n"
            f"generic:  {generic_body.decode()}\ncompiled: {compiled_body.decode()}"
        )
    timing = Timing(document, generic_body, _count_fields(_data(first)))
    if requests is not None:
        timing.requests = requests
        return timing
    # As many requests per round as the generic path answers in ``round_s`` of CPU.
    cpu = time.process_time()
    for _ in range(warmup):
        await generic()
    per_request = (time.process_time() - cpu) / warmup
    timing.requests = max(10, int(round_s / max(per_request, 1e-6)))
    return timing


def _data(result: ExecutionResult | None) -> Any:
    return None if result is None else result.data


def _count_fields(value: Any) -> int:
    """Field positions in an answer: every key of every object, inside lists too."""
    if isinstance(value, dict):
        return len(value) + sum(_count_fields(v) for v in value.values())
    if isinstance(value, list):
        return sum(_count_fields(v) for v in value)
    return 0


async def _round(services: Services, timing: Timing, *, generic_first: bool) -> None:
    plans = services.assembly.plans
    assert plans is not None
    plan = plans.get(timing.document.query, timing.document.operation_name)
    if plan is None:
        raise BenchFailure(f"execution: {timing.document.name}: the plan was dropped")
    generic, compiled = _paths(services, timing.document, plan)
    order = [("generic", generic), ("compiled", compiled)]
    for path, run in order if generic_first else order[::-1]:
        us = await _cpu_per_request(services, timing, path, run)
        (timing.generic_us if path == "generic" else timing.compiled_us).append(us)


async def _cpu_per_request(services: Services, timing: Timing, path: str, run: Run) -> float:
    """Microseconds of this process's CPU per request over ``timing.requests`` requests;
    every answer must come back whole (no errors, not left to the generic executor)."""
    requests = timing.requests
    failed: ExecutionResult | None = None
    left = 0
    db = services.database
    queries = db.queries
    cpu = time.process_time()
    for _ in range(requests):
        result = await run()
        if result is None:
            left += 1
        elif result.errors:
            failed = result
    cpu = time.process_time() - cpu
    timing.sql[path] = (db.queries - queries) / requests
    if left or failed is not None:
        what = f"{left} requests left to the generic executor" if left else ""
        raise BenchFailure(
            f"execution: {timing.document.name}, {path}: {what}"
            + (f" errors: {failed.errors!r:.600}" if failed is not None else "")
        )
    return cpu / requests * 1e6


def print_timings(timings: list[Timing], rounds: int) -> None:
    header = (
        *("document", "fields/req", "bytes", "generic µs/req", "compiled µs/req"),
        *("generic µs/field", "compiled µs/field", "speed-up", "rounds", "SQL/req"),
    )
    rows = [
        (
            t.document.name,
            f"{t.fields:,}",
            f"{len(t.body):,}",
            f"{t.generic:,.0f}",
            f"{t.compiled:,.0f}",
            f"{t.generic / t.fields:.2f}",
            f"{t.compiled / t.fields:.2f}",
            f"{t.speedup:.2f}x",
            f"{min(t.round_speedups()):.2f}-{max(t.round_speedups()):.2f}",
            _sql(t.sql),
        )
        for t in timings
    ]
    print()
    print_rows(header, rows)
    requests = ", ".join(f"{t.document.name} {t.requests:,}" for t in timings)
    print(
        f"CPU of this process per request (time.process_time), a fresh context each; the median "
        f"of {rounds} rounds per path, generic and compiled alternating; requests per round: "
        f"{requests}"
    )
    print(
        "every answer the same bytes from both paths; speed-up: generic over compiled "
        "(rounds: the lowest and the highest of a round's); SQL/req: statements sent per "
        "request with the loaders' cache warm, their CPU in both paths' figures"
    )
    name, goal = GOAL
    goal_timing = next(t for t in timings if t.document.name == name)
    speedup = goal_timing.speedup
    what = f"{name}, compiled at least {goal:g}x faster than generic"
    print_target(what, f"{speedup:.2f}x", speedup >= goal, miss="FAIL")


def _sql(sql: dict[str, float]) -> str:
    generic, compiled = sql.get("generic", 0.0), sql.get("compiled", 0.0)
    if generic == compiled:
        return f"{generic:g}"
    return f"{generic:g} / {compiled:g}"
