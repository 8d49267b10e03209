"""The deployments scenario: the deployments plugin over a catalog with a long deploy history.

A fifth of the catalog's components get deploys (4 per catalog entity by default) over 90 days
(``bench.deployments_history``). Timed: the component page (pipeline with what a rollback
would deploy, last 20 deploys) of the component with the most deploys and 90 days of DORA
figures of the group owning the most deployed components, in process against a plain endpoint
answering the same bytes (``bench.harness.inprocess``), response cache off, each held to 50 ms
of the server's time at p50 and p99; and webhook ingestion: GitHub
``deployment_status`` deliveries from a load process over 16 connections, to Atrium under
uvicorn and to a floor on the same stack that only checks the signature, rounds alternating
(``bench.deployments_webhooks``).
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Final

import orjson

from bench.deployments_history import SLUG, STAGES, generate_history
from bench.deployments_webhooks import plugin, run_webhooks
from bench.generate import generate, print_load
from bench.harness.apps import quiet, started
from bench.harness.database import scratch_database
from bench.harness.explain import explain_misses
from bench.harness.inprocess import Check, Scenario, measure, print_measurements
from bench.harness.timing import frozen_heap
from bench.options import Options
from graph.settings import Settings

__all__ = ["run_deployments"]

COMPONENT_PAGE: Final = """
query ComponentDeploys($ref: String!) {
  entity(ref: $ref) {
    ... on Component {
      pipeline { stages { name current { id state release { version } } latest { id state }
                          waiting { version } rollbackTo { version } } }
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
# Both held to it at the server's p50 and p99, uncached (issue 25: ten million deploys).
TARGET_MS: Final = 50.0
_TEAM: Final = """
select owner_ref, count(*) as count from entities where ref = any($1::text[])
  and owner_ref like 'group:%' group by owner_ref order by count desc, owner_ref limit 1
"""


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


async def run_deployments(options: Options, *, deploys: int, short: bool) -> None:
    begun = time.perf_counter()
    quiet()
    secret = secrets.token_hex(16)
    async with scratch_database() as scratch:
        print(f"\ndeployments: {scratch}")
        settings = Settings(database_url=scratch.url, response_cache=False)
        async with started(settings, [plugin(secret)]) as app:  # the plugin's migration too
            print_load(await generate(scratch.url, options.entities, seed=options.seed))
            history = await generate_history(scratch.url, deploys, options.seed)
            steps = ", ".join(f"{step} {s:.1f} s" for step, s in history.steps.items())
            print(
                f"deploy history: {history.counts.total():,} deploys of {history.releases:,} "
                f"releases on {len(history.counts):,} components ({len(history.slugs):,} with "
                f"{SLUG}) over 90 days, generated in {sum(history.steps.values()):.1f} s ({steps})"
            )
            busiest, most = history.counts.most_common(1)[0]
            team = await app.services.database.fetchrow(_TEAM, list(history.counts))
            if team is None:
                raise LookupError("no group owns a deployed component")
            print(
                f"component page: {busiest} ({most:,} deploys); team DORA: {team['owner_ref']} "
                f"({team['count']} deployed components owned directly, more in its subgroups)"
            )
            page = Scenario(
                "component page", TARGET_MS, COMPONENT_PAGE, {"ref": busiest}, _page_check(most)
            )
            dora = Scenario(
                "team DORA, 90 days", TARGET_MS, TEAM_DORA, {"team": team[0]}, _dora_check
            )
            with frozen_heap():  # what was loaded lives for the run
                rounds, warmup, budget_s = options.rounds, options.warmup, options.budget_s
                results = await measure(
                    app, [page, dora], rounds=rounds, warmup=warmup, budget_s=budget_s
                )
            print_measurements(
                results,
                answer=_answer,
                separator="; ",
                conditions=", response cache off",
                server=True,
            )
            await explain_misses(app, results, every=options.explain_all, server=True)
        await run_webhooks(
            scratch.url, secret, history.slugs, options.seed, short=short, smoke=options.smoke
        )
    print(f"\ndeployments took {time.perf_counter() - begun:.0f} s; scratch database dropped")
