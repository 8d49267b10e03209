"""The catalog scenario, start to end: scratch database, app, data, timings, report."""

from __future__ import annotations

import time

import orjson

from bench.generate import generate, print_load
from bench.harness import BenchFailure
from bench.harness.apps import quiet, started
from bench.harness.database import scratch_database
from bench.harness.explain import explain_misses
from bench.harness.inprocess import measure, print_measurements
from bench.harness.timing import frozen_heap
from bench.importing import run_import
from bench.options import Options
from bench.replica_memory import ROUNDS, replica_memory
from bench.scenarios import pick_inputs, scenarios
from graph.services import Services
from graph.settings import Settings

__all__ = ["Options", "run"]


def _hits(services: Services) -> int:
    """Answers any cache gave so far: the loaders' (L1, L2) and the responses'."""
    assert services.caches is not None  # made by the lifespan
    counts = services.caches.stats.counts
    return sum(n for (_, outcome), n in counts.items() if outcome == "hit")


async def run(options: Options) -> None:
    begun = time.perf_counter()
    quiet()
    async with scratch_database() as scratch:
        print(scratch)
        # No plugin discovery: the benchmark measures the catalog alone. Uncached: no response
        # cache, and loaders' caches that keep nothing, so every request runs its SQL.
        uncached = Settings(database_url=scratch.url, response_cache=False, cache_max_entries=0)
        async with started(uncached) as app:
            report = await generate(scratch.url, options.entities, seed=options.seed)
            print_load(report)

            inputs = await pick_inputs(app.services.database)
            print(
                f"entity page: {inputs.component}; filtered list: {inputs.owner} "
                f"({inputs.owner_components:,} components)"
            )
            # The generated rows are gone; what is left lives for the run.
            chosen = scenarios(inputs)
            hits = _hits(app.services)
            with frozen_heap():
                results = await measure(
                    app,
                    chosen,
                    rounds=options.rounds,
                    warmup=options.warmup,
                    budget_s=options.budget_s,
                )
            hits = _hits(app.services) - hits
            if hits or app.services.responses is not None:
                raise BenchFailure(f"uncached scenarios were answered from a cache {hits} times")
            print_measurements(
                results,
                answer=_answer,
                conditions="; uncached: no response cache, loaders' caches keep nothing (0 hits)",
                server=True,
            )
            await explain_misses(app, results, every=options.explain_all, server=True)
        await replica_memory(scratch.url, chosen, rounds=1 if options.smoke else ROUNDS)
    if options.imports:
        await run_import(options.entities, seed=options.seed)
    print(f"\nbenchmark took {time.perf_counter() - begun:.0f} s; scratch databases dropped")


def _answer(body: bytes) -> str:
    """What a response said, in a few words, to show the timings measured real work."""
    data = orjson.loads(body)["data"]
    if "entities" in data:
        return f"{data['entities']['totalCount']:,} matches"
    if "entity" in data:
        entity = data["entity"]
        lists = ("dependencies", "dependents", "providesApis", "consumesApis")
        return "/".join(str(len(entity.get(key) or [])) for key in lists) + " deps/dependents/APIs"
    return ", ".join(f"{len(value)} {key}" for key, value in data.items())
