"""``python -m bench [--quick | --smoke] [--entities N] [--rounds N] [--explain] [--skip-import]
[--only catalog|ldap|compute|serving|execution|console|deployments|observability|changes|
replicas|subscriptions]
[--users N] [--pinapps N] [--deploys N]``.

Every scenario runs in turn, in ``SCENARIOS``' order, or the one ``--only`` names; each is a
function of the command line's ``Run``, which says how big and how long, and imports its
modules when it runs: a run of one scenario loads what it measures, not every scenario's
modules (the app's and the clusters' emulator's take about a second each). ``--smoke`` is the
smallest run that still takes each scenario through every phase of its report, for the tests
that check the benchmark works (tests/bench_run.py): its figures measure nothing."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from bench.catalog import SMALLEST
from bench.harness import exit_status
from bench.options import Options

# --smoke's sizes, where the command line has an option for them (the scenarios choose the
# rest): the smallest catalog bench.catalog generates, a PinApp for each component of the
# team the compute scenario lists, and the fewest deploys --deploys takes.
SMOKE_ENTITIES: Final = SMALLEST
SMOKE_PINAPPS: Final = 100
SMOKE_DEPLOYS: Final = 1_000


@dataclass(frozen=True, slots=True)
class Run:
    """What the command line asked for, as the scenarios read it."""

    args: argparse.Namespace

    @property
    def smoke(self) -> bool:
        """``--smoke``: every phase of every scenario on the least data, in the fewest rounds."""
        return bool(self.args.smoke)

    @property
    def short(self) -> bool:
        """A short run throughout: ``--quick`` or ``--smoke``, or fewer than 5 rounds."""
        return (
            self.smoke
            or bool(self.args.quick)
            or (self.args.rounds is not None and self.args.rounds < 5)
        )

    @property
    def options(self) -> Options:
        """The catalog's size and the in-process measurement's rounds."""
        quick, smoke = self.args.quick, self.smoke
        return Options(
            entities=self.args.entities
            or (SMOKE_ENTITIES if smoke else 20_000 if quick else 250_000),
            rounds=self.args.rounds or (1 if smoke else 30 if quick else 100),
            warmup=1 if smoke else 5 if quick else 10,
            seed=self.args.seed,
            explain_all=self.args.explain,
            imports=not self.args.skip_import,
            smoke=smoke,
        )


def _catalog(r: Run) -> None:
    from bench.run import run

    asyncio.run(run(r.options))


def _ldap(r: Run) -> None:
    from bench.ldap import LdapOptions, run_ldap

    # The directory scales with the catalog, so --quick and small --entities runs stay quick.
    users = r.args.users or max(200, r.options.entities * 2 // 25)
    run_ldap(LdapOptions(users=users, groups=max(20, users // 10), seed=r.args.seed))


def _compute(r: Run) -> None:
    from bench.compute import run_compute

    quick, smoke = r.args.quick, r.smoke
    pinapps = r.args.pinapps or (SMOKE_PINAPPS if smoke else 2_000 if quick else 20_000)
    rounds = r.args.rounds or (1 if smoke else 30 if quick else 100)
    asyncio.run(run_compute(total=pinapps, quick=quick, rounds=rounds, smoke=smoke))


def _serving(r: Run) -> None:
    from bench.serving import run_serving

    asyncio.run(
        run_serving(quick=r.args.quick, seed=r.args.seed, rounds=r.args.rounds, smoke=r.smoke)
    )


def _execution(r: Run) -> None:
    from bench.execution import run_execution

    asyncio.run(run_execution(short=r.short, seed=r.args.seed, rounds=r.args.rounds, smoke=r.smoke))


def _console(r: Run) -> None:
    from bench.console import run_console

    asyncio.run(run_console(quick=r.args.quick, rounds=r.args.rounds, smoke=r.smoke))


def _deployments(r: Run) -> None:
    from bench.deployments import run_deployments

    deploys = r.args.deploys or (
        SMOKE_DEPLOYS if r.smoke else 50_000 if r.args.quick else r.options.entities * 4
    )
    asyncio.run(run_deployments(r.options, deploys=deploys, short=r.short))


def _observability(r: Run) -> None:
    from bench.observability import run_observability

    asyncio.run(
        run_observability(short=r.short, rounds=r.args.rounds, seed=r.args.seed, smoke=r.smoke)
    )


def _changes(r: Run) -> None:
    from bench.changes import run_changes

    # A catalog import with and without a change hook: a round is two imports.
    asyncio.run(run_changes(rounds=1 if r.short else 5, seed=r.args.seed, smoke=r.smoke))


def _subscriptions(r: Run) -> None:
    from bench.subscriptions import run_subscriptions

    asyncio.run(run_subscriptions(quick=r.short, smoke=r.smoke))


def _replicas(r: Run) -> None:
    from bench.replicas import run_replicas

    asyncio.run(
        run_replicas(quick=r.args.quick, seed=r.args.seed, rounds=r.args.rounds, smoke=r.smoke)
    )


SCENARIOS: Final[dict[str, Callable[[Run], None]]] = {
    "catalog": _catalog,
    "ldap": _ldap,
    "compute": _compute,
    "serving": _serving,
    "execution": _execution,
    "console": _console,
    "deployments": _deployments,
    "observability": _observability,
    "changes": _changes,
    "replicas": _replicas,
    "subscriptions": _subscriptions,
}


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m bench",
        description="Atrium's benchmark on a generated catalog, then a directory sync.",
    )
    size = found.add_mutually_exclusive_group()
    size.add_argument(
        "--quick", action="store_true", help="a short run: 20,000 entities and fewer rounds"
    )
    size.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest run that still takes every scenario through each phase, table and "
        f"target of its report, as Atrium's tests run it: {SMOKE_ENTITIES:,} entities, "
        f"{SMOKE_PINAPPS} PinApps, {SMOKE_DEPLOYS:,} deploys, one round, the shortest "
        "bursts and the fewest requests, subscriptions and page loads; its figures measure "
        "nothing (the options below still set their sizes)",
    )
    found.add_argument(
        "--entities", type=int, help="catalog size (default 250,000; 1,000 with --smoke)"
    )
    found.add_argument(
        "--rounds",
        type=int,
        help="measured requests per scenario (serving and replicas: timed rounds per target; "
        "execution: timed rounds per document and path)",
    )
    found.add_argument("--seed", type=int, default=7, help="seed of the generated data")
    found.add_argument(
        "--explain",
        action="store_true",
        help="show every scenario's statements and slowest plan, not only misses",
    )
    found.add_argument(
        "--only",
        choices=tuple(SCENARIOS),
        help="run the catalog, the LDAP, the compute, the serving, the execution, the console, "
        "the deployments, the observability, the change events, the replicas or the "
        "subscriptions scenarios only",
    )
    found.add_argument(
        "--skip-ldap", action="store_true", help="leave the LDAP scenario out (--only catalog)"
    )
    found.add_argument(
        "--skip-import",
        action="store_true",
        help="leave out the catalog's timed full and no-change imports",
    )
    found.add_argument(
        "--users",
        type=int,
        help="LDAP directory users (default 8 per 100 catalog entities, at least 200: 20,000 "
        "for 250,000, 1,600 with --quick, 200 with --smoke); groups are a tenth",
    )
    found.add_argument(
        "--pinapps",
        type=int,
        help="PinApps of the compute scenario (default 20,000; 2,000 with --quick, 100 with "
        "--smoke)",
    )
    found.add_argument(
        "--deploys",
        type=int,
        help="deploys of the deployments scenario (default 4 per catalog entity: 1,000,000 "
        "for 250,000; 50,000 with --quick, 1,000 with --smoke)",
    )
    return found


def main(argv: list[str] | None = None) -> int:
    arguments = parser()
    args = arguments.parse_args(argv)
    if args.skip_ldap and args.only == "ldap":
        arguments.error("--skip-ldap and --only ldap contradict each other")
    if args.users is not None and args.users < 200:
        arguments.error("--users must be at least 200")
    if args.deploys is not None and args.deploys < 1_000:
        arguments.error("--deploys must be at least 1,000")
    chosen = (
        [args.only] if args.only else [n for n in SCENARIOS if n != "ldap" or not args.skip_ldap]
    )
    r = Run(args)

    def scenarios() -> None:
        for name in chosen:
            SCENARIOS[name](r)

    return exit_status(scenarios)


if __name__ == "__main__":
    sys.exit(main())
