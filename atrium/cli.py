"""The ``atrium`` command line."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atrium.cli_db import prepare
from atrium.cli_lookup import add_lookup_commands
from atrium.cli_ops import persisted_load, sync_ldap, token_create, token_list, token_revoke
from atrium.cli_plugins import add_plugins_command
from atrium.cli_schema import add_schema_commands

if TYPE_CHECKING:
    # Imported by main() once a command is to run: --help and a wrong argument answer
    # without it (importing the settings is most of their start-up).
    from graph.settings import Settings

__all__ = ["main", "uvicorn_options"]

log = logging.getLogger("atrium.cli")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    from graph.logs import configure_logging
    from graph.settings import Settings

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
        "are reported and skipped; the rest is stored in one transaction. Placeholders "
        "($text, $json, $yaml) may name files inside PATH and URLs on the hosts "
        "ATRIUM_CATALOG_FETCH_HOSTS allows; an entity whose placeholder cannot be read is "
        "stored without that field, reported, and tried again on the next import. Exits 1 "
        "when any document was rejected.",
    )
    imp.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    imp.set_defaults(run=_catalog_import)

    sync = commands.add_parser(
        "sync", help="sync from outside sources", description="Sync from outside sources."
    )
    sync_commands = sync.add_subparsers(title="commands", metavar="COMMAND", required=True)
    ldap = sync_commands.add_parser(
        "ldap",
        help="sync users and groups from the LDAP directory now",
        description="Sync users and groups from the directory now, with a progress bar and a "
        "summary. A run that would delete more than ATRIUM_LDAP_DELETION_BRAKE of the users or "
        "groups stops and changes nothing; --force applies it anyway. Exits 1 when the run did "
        "not succeed, 75 when another sync is running.",
    )
    ldap.add_argument("--force", action="store_true", help="apply even past the deletion brake")
    ldap.set_defaults(run=sync_ldap)

    token = commands.add_parser("token", help="API tokens", description="API tokens for tools.")
    token_commands = token.add_subparsers(title="commands", metavar="COMMAND", required=True)
    create = token_commands.add_parser(
        "create",
        help="create a token and print it once",
        description="Create an API token; it is printed once and stored only as a hash.",
    )
    create.add_argument("--name", required=True, help="what the token is for, e.g. ci-deployer")
    create.add_argument(
        "--scope",
        action="append",
        choices=["read", "write", "admin"],
        required=True,
        help="read, write or admin; repeat for several",
    )
    create.add_argument(
        "--subject", help="the user or group the token acts as (needed for write), e.g. group:ci"
    )
    create.set_defaults(run=token_create)
    listing = token_commands.add_parser("list", help="list tokens", description="List tokens.")
    listing.set_defaults(run=token_list)
    revoke = token_commands.add_parser(
        "revoke", help="revoke a token", description="Revoke a token by its id."
    )
    revoke.add_argument("id")
    revoke.set_defaults(run=token_revoke)

    persisted = commands.add_parser(
        "persisted", help="persisted queries", description="Persisted queries."
    )
    persisted_commands = persisted.add_subparsers(
        title="commands", metavar="COMMAND", required=True
    )
    load = persisted_commands.add_parser(
        "load",
        help="trust the operations of an Apollo persisted-query manifest",
        description="Load an Apollo persisted-query manifest (apollo-persisted-query-manifest, "
        "version 1): each operation is checked against its id and the schema, then trusted. In "
        "production mode only trusted operations run.",
    )
    load.add_argument("manifest", type=Path, metavar="MANIFEST")
    load.set_defaults(run=persisted_load)

    add_lookup_commands(commands)
    add_plugins_command(commands)

    add_schema_commands(commands)
    return parser


def _serve(settings: Settings, args: argparse.Namespace) -> int:
    url = asyncio.run(prepare(settings, demo=args.demo, quiet=True))
    # Workers connect to the same database; an embedded one stays up as long as this process.
    os.environ["ATRIUM_DATABASE_URL"] = url
    with contextlib.ExitStack() as demos:
        if args.demo:
            _start_demos(settings, demos)
        return _run_server(settings, args)


def _start_demos(settings: Settings, stack: contextlib.ExitStack) -> None:
    """What plugins add to the demo (PinCompute's emulated cluster), around the server and all
    its workers; development only."""
    if settings.production:
        log.warning("--demo adds no demo backends in production mode")
        return
    from atrium.cli_db import DEMO_PATH
    from graph.assembly import assemble, core_plugins, discover_plugins

    assembly = assemble(settings, [*core_plugins(), *discover_plugins(settings)])
    for plugin_id, start in assembly.demos:
        env = stack.enter_context(start(DEMO_PATH, settings.data_dir))
        log.info("demo started", extra={"plugin": plugin_id, "settings": sorted(env)})
        os.environ.update(env)


def _run_server(settings: Settings, args: argparse.Namespace) -> int:
    """Serve until SIGTERM or Ctrl+C. Each worker drains at SIGTERM (``atrium.drain``):
    readiness 503 at once, serving on for ATRIUM_SHUTDOWN_GRACE seconds, then a graceful stop."""
    import uvicorn

    from atrium.drain import Supervisor
    from graph.logs import flush_logs

    # uvicorn re-raises SIGTERM after its graceful shutdown; exiting through Python instead of
    # the default handler lets exit hooks run, and so stops an embedded PostgreSQL we started.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    # uvicorn stops at SIGINT whatever its disposition was, then raises it again under the one
    # it found: a server started as a shell's background job (SIGINT ignored) would stop at
    # Ctrl+C and exit 0. Python's own handler makes it KeyboardInterrupt, status 130, always.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # Bound here, not by uvicorn: the socket then says TCP, and asyncio turns Nagle's algorithm
    # off on the connections it accepts (uvicorn's own socket for several workers does not,
    # and a keep-alive client would wait ~40 ms for each answer). Connections made before the
    # app has started wait in its backlog.
    try:
        sock = listening_socket(args.host, args.port)
    except OSError as exc:
        print(f"atrium: cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    config = uvicorn.Config(
        "atrium.app:served_app",
        factory=True,
        workers=args.workers,
        **uvicorn_options(settings.keep_alive_timeout),
    )
    flush_logs()  # what the start-up logged comes before the line that says it is done
    host = f"[{args.host}]" if ":" in args.host else args.host
    workers = f", {args.workers} workers" if args.workers > 1 else ""
    print(
        f"Atrium is serving the console at http://{host}:{args.port}/ and the API at "
        f"/graphql{workers}; Ctrl+C stops it",
        flush=True,
    )
    if args.workers == 1:
        uvicorn.Server(config).run(sockets=[sock])
    else:
        Supervisor(config, sockets=[sock]).run()
    return 0


def uvicorn_options(keep_alive: int | None = None) -> dict[str, Any]:
    """How every Atrium server runs uvicorn: uvloop's event loop and httptools' HTTP parser
    (the pure-Python fallbacks serve a third as many requests), through Atrium's protocol,
    which sends the hot answers itself (``atrium.http_protocol``; uvicorn's own for any other
    app), Atrium's JSON logs instead of uvicorn's, Atrium's access log (with the GraphQL
    operation) instead of uvicorn's, idle keep-alive connections kept ``keep_alive``
    seconds (uvicorn's 5 s races a balancer's reuse of its idle connections), and websockets
    compressed with less memory each, closed at once when too slow (``atrium.ws_protocol``),
    and the client's address the socket's peer: uvicorn's proxy headers are off (by default
    it takes X-Forwarded-For from any local peer), so a proxy is trusted by its own address
    (ATRIUM_TRUSTED_PROXIES), never by what a header says. ``keep_alive`` is
    ATRIUM_KEEP_ALIVE_TIMEOUT's default unless given."""
    if keep_alive is None:
        from graph.settings import KEEP_ALIVE_TIMEOUT

        keep_alive = KEEP_ALIVE_TIMEOUT
    return {
        "loop": "uvloop",
        "http": "atrium.http_protocol:http_protocol",
        "ws": "atrium.ws_protocol:AtriumWebSocketProtocol",
        "log_config": None,
        "access_log": False,
        "timeout_keep_alive": keep_alive,
        "proxy_headers": False,
    }


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket for workers to share; naming the protocol makes asyncio turn Nagle's
    algorithm off on the connections it accepts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def _migrate(settings: Settings, args: argparse.Namespace) -> int:
    asyncio.run(prepare(settings, demo=False))
    print("database is up to date")
    return 0


def _catalog_import(settings: Settings, args: argparse.Namespace) -> int:
    from loaders.announce import publish_invalidation
    from sources.catalog.documents import read_paths
    from sources.catalog.store import apply_batch
    from sources.db import Database

    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"atrium: no such file or directory: {', '.join(missing)}", file=sys.stderr)
        return 1

    async def run() -> int:
        url = await prepare(settings, demo=False)
        db = await Database.connect(url, settings.database_options, min_size=1, max_size=2)
        try:
            batch = await asyncio.to_thread(read_paths, args.paths, settings.catalog_fetch)
            result = await apply_batch(db, batch)
        finally:
            await db.close()
        await publish_invalidation(settings.redis_url, settings.cache_prefix, result.affected)
        for error in result.errors:
            print(f"rejected: {error}", file=sys.stderr)
        for missing in result.unavailable:
            print(f"unavailable: {missing}", file=sys.stderr)
        unavailable = len({(u.location, u.document) for u in result.unavailable})
        if batch.skipped:
            print(f"skipped {len(batch.skipped)} YAML files that declare no entity")
        print(
            f"created {len(result.created)}, updated {len(result.updated)}, "
            f"unchanged {len(result.unchanged)}, deleted {len(result.deleted)}, "
            f"rejected {len(result.errors)}"
            + (f"; {unavailable} stored with fields unavailable" if unavailable else "")
        )
        return 1 if result.errors else 0

    return asyncio.run(run())


if __name__ == "__main__":
    sys.exit(main())
