"""``python -m bench [--quick] [--entities N] [--rounds N] [--explain] [--skip-import]
[--only catalog|ldap|compute|serving|execution|console|deployments|observability|changes|
replicas]
[--users N] [--pinapps N] [--deploys N]``."""

from __future__ import annotations

import argparse
import asyncio
import sys

from bench.changes import run_changes
from bench.compute import run_compute
from bench.console import run_console
from bench.database import admin_url
from bench.deployments import run_deployments
from bench.execution import run_execution
from bench.harness import BenchFailure
from bench.ldap import LdapOptions, run_ldap
from bench.observability import run_observability
from bench.replicas import run_replicas
from bench.run import Options, run
from bench.serving import run_serving


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Atrium's benchmark on a generated catalog, then a directory sync.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 20,000 entities and fewer rounds"
    )
    parser.add_argument("--entities", type=int, help="catalog size (default 250,000)")
    parser.add_argument(
        "--rounds",
        type=int,
        help="measured requests per scenario (serving and replicas: timed rounds per target; "
        "execution: timed rounds per document and path)",
    )
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated data")
    parser.add_argument(
        "--explain",
        action="store_true",
        help="show every scenario's statements and slowest plan, not only misses",
    )
    parser.add_argument(
        "--only",
        choices=(
            "catalog",
            "ldap",
            "compute",
            "serving",
            "execution",
            "console",
            "deployments",
            "observability",
            "changes",
            "replicas",
        ),
        help="run the catalog, the LDAP, the compute, the serving, the execution, the console, "
        "the deployments, the observability, the change events or the replicas scenarios only",
    )
    parser.add_argument(
        "--skip-ldap", action="store_true", help="leave the LDAP scenario out (--only catalog)"
    )
    parser.add_argument(
        "--skip-import",
        action="store_true",
        help="leave out the catalog's timed full and no-change imports",
    )
    parser.add_argument(
        "--users",
        type=int,
        help="LDAP directory users (default 8 per 100 catalog entities: 20,000 for 250,000, "
        "1,600 with --quick); groups are a tenth",
    )
    parser.add_argument(
        "--pinapps",
        type=int,
        help="PinApps of the compute scenario (default 20,000; 2,000 with --quick)",
    )
    parser.add_argument(
        "--deploys",
        type=int,
        help="deploys of the deployments scenario (default 4 per catalog entity: 1,000,000 "
        "for 250,000; 50,000 with --quick)",
    )
    args = parser.parse_args(argv)
    if args.skip_ldap and args.only == "ldap":
        parser.error("--skip-ldap and --only ldap contradict each other")
    if args.users is not None and args.users < 200:
        parser.error("--users must be at least 200")
    if args.deploys is not None and args.deploys < 1_000:
        parser.error("--deploys must be at least 1,000")
    options = Options(
        entities=args.entities or (20_000 if args.quick else 250_000),
        rounds=args.rounds or (30 if args.quick else 100),
        warmup=5 if args.quick else 10,
        seed=args.seed,
        explain_all=args.explain,
        imports=not args.skip_import,
    )
    # The directory scales with the catalog, so --quick and small --entities runs stay quick.
    users = args.users or max(200, options.entities * 2 // 25)
    try:
        if args.only in (None, "catalog"):
            asyncio.run(run(options))
        if args.only in (None, "ldap") and not args.skip_ldap:
            run_ldap(LdapOptions(users=users, groups=max(20, users // 10), seed=args.seed))
        if args.only in (None, "compute"):
            pinapps = args.pinapps or (2_000 if args.quick else 20_000)
            asyncio.run(_compute(pinapps, args.quick, args.rounds or (30 if args.quick else 100)))
        if args.only in (None, "serving"):
            asyncio.run(run_serving(quick=args.quick, seed=args.seed, rounds=args.rounds))
        if args.only in (None, "execution"):
            short = args.quick or (args.rounds is not None and args.rounds < 5)
            asyncio.run(run_execution(short=short, seed=args.seed, rounds=args.rounds))
        if args.only in (None, "console"):
            asyncio.run(run_console(quick=args.quick, rounds=args.rounds))
        if args.only in (None, "deployments"):
            deploys = args.deploys or (50_000 if args.quick else options.entities * 4)
            # As the serving scenario: a run of few rounds is short throughout.
            short = args.quick or (args.rounds is not None and args.rounds < 5)
            asyncio.run(run_deployments(options, deploys=deploys, short=short))
        if args.only in (None, "observability"):
            short = args.quick or (args.rounds is not None and args.rounds < 5)
            asyncio.run(run_observability(short=short, rounds=args.rounds, seed=args.seed))
        if args.only in (None, "changes"):
            # A catalog import with and without a change hook: a round is two imports.
            short = args.quick or (args.rounds is not None and args.rounds < 5)
            asyncio.run(run_changes(rounds=1 if short else 5, seed=args.seed))
        if args.only in (None, "replicas"):
            asyncio.run(run_replicas(quick=args.quick, seed=args.seed, rounds=args.rounds))
    except BenchFailure as exc:
        print(f"\nbenchmark FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


async def _compute(total: int, quick: bool, rounds: int) -> None:
    async with admin_url() as (url, _):
        await run_compute(url, total=total, quick=quick, rounds=rounds)


if __name__ == "__main__":
    sys.exit(main())
