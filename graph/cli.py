"""The ``atrium`` command line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from graph.settings import Settings

__all__ = ["main"]

log = logging.getLogger("atrium.cli")

DEMO_PATH = Path(__file__).resolve().parent.parent / "examples"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    from graph.logs import configure_logging

    settings = Settings()
    configure_logging(settings.log_level)
    try:
        return int(args.run(settings, args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        from sources.errors import AtriumError

        if isinstance(exc, AtriumError):
            print(f"atrium: {exc}", file=sys.stderr)
            return 1
        raise


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="atrium", description="The GraphQL backend of an internal developer console."
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    serve = commands.add_parser(
        "serve", help="serve the API", description="Serve the API over HTTP."
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="port to bind (default 8000)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    serve.add_argument(
        "--demo",
        action="store_true",
        help="load the demo organisation when the catalog is empty",
    )
    serve.set_defaults(run=_serve)

    migrate = commands.add_parser(
        "migrate", help="apply database migrations", description="Apply pending migrations."
    )
    migrate.set_defaults(run=_migrate)

    catalog = commands.add_parser(
        "catalog", help="catalog commands", description="Catalog commands."
    )
    catalog_commands = catalog.add_subparsers(title="commands", metavar="COMMAND", required=True)
    imp = catalog_commands.add_parser(
        "import",
        help="import catalog-info.yaml files",
        description="Import catalog-info.yaml files or directories of them. Invalid documents "
        "are reported and skipped; the rest is stored in one transaction. Exits 1 when any "
        "document was rejected.",
    )
    imp.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    imp.set_defaults(run=_catalog_import)

    schema = commands.add_parser("schema", help="schema commands", description="Schema commands.")
    schema_commands = schema.add_subparsers(title="commands", metavar="COMMAND", required=True)
    printer = schema_commands.add_parser(
        "print",
        help="print the GraphQL schema (SDL)",
        description="Print the schema assembled from the catalog and the enabled plugins.",
    )
    printer.set_defaults(run=_schema_print)
    return parser


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    url = asyncio.run(_prepare(settings, demo=args.demo))
    # Workers connect to the same database; an embedded one stays up as long as this process.
    os.environ["ATRIUM_DATABASE_URL"] = url
    # uvicorn re-raises SIGTERM after its graceful shutdown; exiting through Python instead of
    # the default handler lets exit hooks run, and so stops an embedded PostgreSQL we started.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    log.info("serving", extra={"host": args.host, "port": args.port, "workers": args.workers})
    uvicorn.run(
        "graph.app:app_from_environment",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_config=None,
        access_log=False,
    )
    return 0


async def _prepare(settings: Settings, *, demo: bool) -> str:
    """Resolve the database, migrate it, and load the demo organisation if asked and empty."""
    from graph.app import database_url
    from graph.assembly import assemble, core_plugins, discover_plugins
    from sources.catalog.documents import read_paths
    from sources.catalog.store import apply_batch
    from sources.db import Database
    from sources.migrations import apply_migrations

    url = await database_url(settings)
    assembly = assemble(settings, [*core_plugins(), *discover_plugins(settings)])
    db = await Database.connect(url, min_size=1, max_size=2)
    try:
        applied = await apply_migrations(db, assembly.migrations)
        for migration in applied:
            print(f"applied migration {migration.scope}/{migration.version:04d}_{migration.name}")
        if demo:
            if await db.fetchval("select exists (select 1 from entities)"):
                print("catalog is not empty; demo organisation not loaded")
            else:
                result = await apply_batch(db, read_paths([DEMO_PATH]))
                print(f"loaded the demo organisation: {len(result.created)} entities")
    finally:
        await db.close()
    return url


def _migrate(settings: Settings, args: argparse.Namespace) -> int:
    asyncio.run(_prepare(settings, demo=False))
    print("database is up to date")
    return 0


def _catalog_import(settings: Settings, args: argparse.Namespace) -> int:
    from sources.catalog.documents import read_paths
    from sources.catalog.store import apply_batch
    from sources.db import Database

    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"atrium: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 1

    async def run() -> int:
        url = await _prepare(settings, demo=False)
        db = await Database.connect(url, min_size=1, max_size=2)
        try:
            result = await apply_batch(db, read_paths(args.paths))
        finally:
            await db.close()
        for error in result.errors:
            print(f"rejected: {error}", file=sys.stderr)
        print(
            f"created {len(result.created)}, updated {len(result.updated)}, "
            f"unchanged {len(result.unchanged)}, deleted {len(result.deleted)}, "
            f"rejected {len(result.errors)}"
        )
        return 1 if result.errors else 0

    return asyncio.run(run())


def _schema_print(settings: Settings, args: argparse.Namespace) -> int:
    from graph.schema_file import schema_sdl

    sys.stdout.write(schema_sdl(settings))
    return 0


if __name__ == "__main__":
    sys.exit(main())
