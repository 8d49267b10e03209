"""``python -m bench [--quick] [--entities N] [--rounds N] [--explain] [--skip-import]
[--only catalog|ldap|compute|serving|execution|console|deployments|observability|changes|
replicas|subscriptions]
[--users N] [--pinapps N] [--deploys N]``.

Every scenario runs in turn, in ``SCENARIOS``' order, or the one ``--only`` names; each is a
function of the command line's ``Run``, which says how big and how long."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from bench.changes import run_changes
from bench.compute import run_compute
from bench.console import run_console
from bench.deployments import run_deployments
from bench.execution import run_execution
from bench.harness import exit_status
from bench.ldap import LdapOptions, run_ldap
from bench.observability import run_observability
from bench.replicas import run_replicas
from bench.run import Options, run
from bench.serving import run_serving
from bench.subscriptions import run_subscriptions


@dataclass(frozen=True, slots=True)
class Run:
    """What the command line asked for, as the scenarios read it."""

    args: argparse.Namespace

    @property
    def short(self) -> bool:
        """A short run throughout: ``--quick``, or fewer than 5 rounds."""
        return bool(self.args.quick) or (self.args.rounds is not None and self.args.rounds < 5)

    @property
    def options(self) -> Options:
        """The catalog's size and the in-process measurement's rounds."""
        quick = self.args.quick
        return Options(
            entities=self.args.entities or (20_000 if quick else 250_000),
            rounds=self.args.rounds or (30 if quick else 100),
            warmup=5 if quick else 10,
            seed=self.args.seed,
            explain_all=self.args.explain,
            imports=not self.args.skip_import,
        )


def _catalog(r: Run) -> None:
    asyncio.run(run(r.options))


def _ldap(r: Run) -> None:
    # The directory scales with the catalog, so --quick and small --entities runs stay quick.
    users = r.args.users or max(200, r.options.entities * 2 // 25)
    run_ldap(LdapOptions(users=users, groups=max(20, users // 10), seed=r.args.seed))


def _compute(r: Run) -> None:
    pinapps = r.args.pinapps or (2_000 if r.args.quick else 20_000)
    rounds = r.args.rounds or (30 if r.args.quick else 100)
    asyncio.run(run_compute(total=pinapps, quick=r.args.quick, rounds=rounds))


def _serving(r: Run) -> None:
    asyncio.run(run_serving(quick=r.args.quick, seed=r.args.seed, rounds=r.args.rounds))


def _execution(r: Run) -> None:
    asyncio.run(run_execution(short=r.short, seed=r.args.seed, rounds=r.args.rounds))


def _console(r: Run) -> None:
    asyncio.run(run_console(quick=r.args.quick, rounds=r.args.rounds))


def _deployments(r: Run) -> None:
    deploys = r.args.deploys or (50_000 if r.args.quick else r.options.entities * 4)
    asyncio.run(run_deployments(r.options, deploys=deploys, short=r.short))


def _observability(r: Run) -> None:
    asyncio.run(run_observability(short=r.short, rounds=r.args.rounds, seed=r.args.seed))


def _changes(r: Run) -> None:
    # A catalog import with and without a change hook: a round is two imports.
    asyncio.run(run_changes(rounds=1 if r.short else 5, seed=r.args.seed))


def _subscriptions(r: Run) -> None:
    asyncio.run(run_subscriptions(quick=r.short))


def _replicas(r: Run) -> None:
    asyncio.run(run_replicas(quick=r.args.quick, seed=r.args.seed, rounds=r.args.rounds))


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
    found.add_argument(
        "--quick", action="store_true", help="a smoke run: 20,000 entities and fewer rounds"
    )
    found.add_argument("--entities", type=int, help="catalog size (default 250,000)")
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
        help="LDAP directory users (default 8 per 100 catalog entities: 20,000 for 250,000, "
        "1,600 with --quick); groups are a tenth",
    )
    found.add_argument(
        "--pinapps",
        type=int,
        help="PinApps of the compute scenario (default 20,000; 2,000 with --quick)",
    )
    found.add_argument(
        "--deploys",
        type=int,
        help="deploys of the deployments scenario (default 4 per catalog entity: 1,000,000 "
        "for 250,000; 50,000 with --quick)",
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
