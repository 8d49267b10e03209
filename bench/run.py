"""The catalog scenario, start to end: scratch database, app, data, timings, report."""

from __future__ import annotations

import time
from dataclasses import dataclass

import orjson

from bench.generate import generate, print_load
from bench.harness.apps import quiet, started
from bench.harness.database import scratch_database
from bench.harness.explain import explain_misses
from bench.harness.inprocess import measure, print_measurements
from bench.harness.timing import frozen_heap
from bench.scenarios import pick_inputs, scenarios
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


async def run(options: Options) -> None:
    begun = time.perf_counter()
    quiet()
    async with scratch_database() as scratch:
        print(scratch)
        # No plugin discovery: the benchmark measures the catalog alone.
        async with started(Settings(database_url=scratch.url)) as app:
            report = await generate(scratch.url, options.entities, seed=options.seed)
            print_load(report)

            inputs = await pick_inputs(app.services.database)
            print(
                f"entity page: {inputs.component}; filtered list: {inputs.owner} "
                f"({inputs.owner_components:,} components)"
            )
            # The generated rows are gone; what is left lives for the run.
            with frozen_heap():
                results = await measure(
                    app,
                    scenarios(inputs),
                    rounds=options.rounds,
                    warmup=options.warmup,
                    budget_s=options.budget_s,
                )
            print_measurements(results, answer=_answer)
            await explain_misses(app, results, every=options.explain_all)
    print(f"\nbenchmark took {time.perf_counter() - begun:.0f} s; scratch database dropped")


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
