"""One benchmark run, start to end: scratch database, app, data, timings, report."""

from __future__ import annotations

import gc
import logging
import time
from dataclasses import dataclass

from atrium.app import create_app
from bench.database import scratch_database
from bench.explain import explain_slowest
from bench.generate import generate
from bench.harness import BenchFailure, measure
from bench.importing import run_import
from bench.replica_memory import replica_memory
from bench.report import print_explain, print_load, print_table
from bench.scenarios import pick_inputs, scenarios
from graph.services import Services
from graph.settings import Settings

__all__ = ["Options", "run"]


@dataclass(frozen=True, slots=True)
class Options:
    entities: int
    rounds: int
    warmup: int
    seed: int
    explain_all: bool
    # Measuring stops early (after at least 20 rounds) past this, to keep a run near 5 minutes.
    budget_s: float = 150.0
    # A full import of the catalog through `atrium catalog import`'s code, then a no-change one.
    imports: bool = True


def _hits(services: Services) -> int:
    """Answers any cache gave so far: the loaders' (L1, L2) and the responses'."""
    assert services.caches is not None  # made by the lifespan
    counts = services.caches.stats.counts
    return sum(n for (_, outcome), n in counts.items() if outcome == "hit")


async def run(options: Options) -> None:
    started = time.perf_counter()
    # The app logs each request at INFO; printing them would be measured too.
    logging.getLogger("atrium").setLevel(logging.WARNING)
    async with scratch_database() as scratch:
        print(f"scratch database {scratch.name} on the {scratch.server}")
        # No plugin discovery: the benchmark measures the catalog alone. Uncached: no response
        # cache, and loaders' caches that keep nothing, so every request runs its SQL.
        settings = Settings(database_url=scratch.url, response_cache=False, cache_max_entries=0)
        app = create_app(settings, plugins=[])
        async with app.router.lifespan_context(app):
            services: Services = app.state.services
            report = await generate(scratch.url, options.entities, seed=options.seed)
            print_load(report)

            inputs = await pick_inputs(services.database)
            print(
                f"entity page: {inputs.component}; filtered list: {inputs.owner} "
                f"({inputs.owner_components:,} components)"
            )
            # The generated rows are gone; what is left lives for the run. Freezing it keeps
            # the collector from rescanning it during the timings, for app and baseline alike.
            gc.collect()
            gc.freeze()
            chosen = scenarios(inputs)
            hits = _hits(services)
            results = await measure(
                app,
                chosen,
                rounds=options.rounds,
                warmup=options.warmup,
                budget_s=options.budget_s,
            )
            hits = _hits(services) - hits
            if hits or services.responses is not None:
                raise BenchFailure(f"uncached scenarios were answered from a cache {hits} times")
            print()
            print_table(
                results,
                cached="uncached (no response cache; loaders' caches keep nothing: 0 hits)",
            )
            for result in results:
                if options.explain_all or not result.server_passed:
                    statements, plan = await explain_slowest(app, result.scenario)
                    print_explain(result.scenario.name, statements, plan)
            gc.unfreeze()
        await replica_memory(scratch.url, chosen)
    if options.imports:
        await run_import(options.entities, seed=options.seed)
    print(f"\nbenchmark took {time.perf_counter() - started:.0f} s; scratch database dropped")
