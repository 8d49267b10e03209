"""``python -m bench [--quick] [--entities N] [--rounds N] [--explain]``."""

from __future__ import annotations

import argparse
import asyncio
import sys

from bench.harness import BenchFailure
from bench.run import Options, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description="Atrium's benchmark on a generated catalog."
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 20,000 entities and fewer rounds"
    )
    parser.add_argument("--entities", type=int, help="catalog size (default 250,000)")
    parser.add_argument("--rounds", type=int, help="measured requests per scenario")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated catalog")
    parser.add_argument(
        "--explain",
        action="store_true",
        help="show every scenario's statements and slowest plan, not only misses",
    )
    args = parser.parse_args(argv)
    options = Options(
        entities=args.entities or (20_000 if args.quick else 250_000),
        rounds=args.rounds or (30 if args.quick else 100),
        warmup=5 if args.quick else 10,
        seed=args.seed,
        explain_all=args.explain,
    )
    try:
        asyncio.run(run(options))
    except BenchFailure as exc:
        print(f"\nbenchmark FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
