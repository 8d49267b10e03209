"""Operators' ``atrium`` commands: the directory sync, API tokens, persisted queries."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any, TextIO

from atrium.cli_db import prepare, with_database

if TYPE_CHECKING:
    from graph.settings import Settings

__all__ = ["persisted_load", "sync_ldap", "token_create", "token_list", "token_revoke"]


def sync_ldap(settings: Settings, args: argparse.Namespace) -> int:
    from graph.ownership.directory import directory_config
    from loaders.announce import publish_invalidation
    from sources.db import Database
    from sources.ldap.sync import SyncInProgress, sync_directory

    config = directory_config(settings)
    progress = Progress(sys.stderr)

    async def run() -> int:
        url = await prepare(settings, demo=False, quiet=True)
        db = await Database.connect(url, settings.database_options, min_size=2, max_size=3)
        try:
            report = await sync_directory(
                db,
                config,
                brake=settings.ldap_deletion_brake,
                force=args.force,
                progress=progress.update,
            )
        except SyncInProgress as exc:
            print(f"atrium: {exc}; try again when it is done", file=sys.stderr)
            return 75
        finally:
            progress.done()
            await db.close()
        await publish_invalidation(settings.redis_url, settings.cache_prefix, report.changed_refs)
        for skipped in report.skipped:
            print(f"skipped: {skipped.dn}: {skipped.reason}", file=sys.stderr)
        for warning in report.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        print(
            f"{report.outcome}: added {report.added}, changed {report.changed}, "
            f"removed {report.removed}, skipped {len(report.skipped)} "
            f"({report.users_read} users and {report.groups_read} groups read) "
            f"in {report.duration:.1f} s"
        )
        if report.error:
            print(f"atrium: {report.error}", file=sys.stderr)
        return 0 if report.outcome == "succeeded" else 1

    return asyncio.run(run())


class Progress:
    """A one-line progress display on a terminal; plain lines elsewhere (CI logs, pipes)."""

    WIDTH = 30

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.counts: dict[str, int] = {}

    def update(self, stage: str, count: int) -> None:
        self.counts[stage] = count
        text = ", ".join(f"{name} {n:,}" for name, n in self.counts.items())
        if self.tty:
            filled = (len(self.counts) * self.WIDTH) // 3
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            self.stream.write(f"\r[{bar}] {text}\x1b[K")
        elif stage == "writing":
            users, groups = self.counts.get("users", 0), self.counts.get("groups", 0)
            self.stream.write(f"read {users:,} users and {groups:,} groups; writing\n")
        self.stream.flush()

    def done(self) -> None:
        if self.tty and self.counts:
            self.stream.write("\n")
            self.stream.flush()


def token_create(settings: Settings, args: argparse.Namespace) -> int:
    from sources.auth import create_token
    from sources.catalog.refs import normalize_ref

    subject = normalize_ref(args.subject, default_kind="User") if args.subject else None
    if "write" in args.scope and subject is None:
        print(
            "atrium: a write token needs --subject, the user or group it acts as", file=sys.stderr
        )
        return 2

    async def run(db: Any) -> int:
        token_id, token = await create_token(db, args.name, args.scope, subject)
        print(f"created token {token_id} ({', '.join(sorted(set(args.scope)))})", file=sys.stderr)
        print(token)
        return 0

    return asyncio.run(with_database(settings, run))


def token_list(settings: Settings, args: argparse.Namespace) -> int:
    from sources.auth import list_tokens

    async def run(db: Any) -> int:
        for t in await list_tokens(db):
            state = f"revoked {t.revoked_at:%Y-%m-%d}" if t.revoked_at else "active"
            used = f"{t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "never"
            print(
                f"{t.id}  {t.name}  {','.join(t.scopes)}  {t.subject_ref or '-'}  "
                f"created {t.created_at:%Y-%m-%d}  used {used}  {state}"
            )
        return 0

    return asyncio.run(with_database(settings, run))


def token_revoke(settings: Settings, args: argparse.Namespace) -> int:
    from loaders.announce import publish_invalidation
    from sources.auth import revoke_token

    async def run(db: Any) -> int:
        if await revoke_token(db, args.id):
            # Serving replicas keep verified tokens for a moment: tell them.
            await publish_invalidation(
                settings.redis_url, settings.cache_prefix, [f"token:{args.id}"]
            )
            print(f"revoked token {args.id}")
            return 0
        print(f"atrium: no active token {args.id}", file=sys.stderr)
        return 1

    return asyncio.run(with_database(settings, run))


def persisted_load(settings: Settings, args: argparse.Namespace) -> int:
    from graphql import GraphQLError, parse, validate

    from graph.assembly import assemble, core_plugins, discover_plugins
    from graph.persisted import read_manifest, trust

    try:
        documents = read_manifest(args.manifest)
    except ValueError as exc:
        print(f"atrium: {exc}", file=sys.stderr)
        return 1
    schema = assemble(settings, [*core_plugins(), *discover_plugins(settings)]).schema
    assert schema is not None
    problems = []
    for _, body, name in documents:
        try:
            errors = validate(schema._schema, parse(body))
        except GraphQLError as exc:
            errors = [exc]
        problems += [f"{name or body[:40]!r}: {e.message}" for e in errors]
    if problems:
        for problem in problems:
            print(f"atrium: {problem}", file=sys.stderr)
        print("atrium: nothing loaded: the manifest does not fit this schema", file=sys.stderr)
        return 1

    async def run(db: Any) -> int:
        await trust(db, documents)
        print(f"trusted {len(documents)} operations from {args.manifest}")
        return 0

    return asyncio.run(with_database(settings, run))
