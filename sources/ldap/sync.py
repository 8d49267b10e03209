"""The directory sync: read everything, compute the diff, apply it in one transaction.

Safety rules, each a complaint about other tools' LDAP sync:
- a search that fails on any page fails the run (reader.py), so a partial read never deletes;
- a run that would delete more than a share of users or of groups stops, changing nothing,
  unless forced (the deletion brake);
- a record that does not fit is skipped and reported with its DN; the rest syncs;
- one replica syncs at a time (a PostgreSQL advisory lock, held by a transaction open for the
  run, so that it holds behind PgBouncer in transaction mode too); an unchanged directory writes
  nothing to the catalog.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

import orjson

from sources.catalog.documents import DocumentError, ParsedBatch
from sources.catalog.model import Entity, validate_entity
from sources.catalog.store import apply_batch
from sources.db import Database, Executor
from sources.errors import AtriumError, EntityValidationError, SyncBraked
from sources.ldap.config import DirectoryConfig
from sources.ldap.reader import RawEntry, read_directory
from sources.ldap.records import DirectoryGroup, DirectoryUser, Skipped, parse_groups, parse_users

__all__ = [
    "LOCK_KEY",
    "ORIGIN",
    "SyncInProgress",
    "SyncReport",
    "group_cycles",
    "sync_directory",
]

log = logging.getLogger(__name__)

ORIGIN: Final = "ldap"
MANAGED_BY: Final = "ldap"
LOCK_KEY: Final = 0x41_54_52_4C_44_50  # "ATRLDP"
DN_ANNOTATION: Final = "atrium.dev/ldap-dn"
UID_ANNOTATION: Final = "atrium.dev/ldap-uid"

Progress = Callable[[str, int], None]


class SyncInProgress(AtriumError):
    """Another replica (or command) holds the sync lock."""


@dataclass(slots=True)
class SyncReport:
    run_id: int
    outcome: str  # succeeded, braked, failed, not-due
    forced: bool = False
    users_read: int = 0
    groups_read: int = 0
    added: int = 0
    changed: int = 0
    removed: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    duration: float = 0.0
    changed_refs: list[str] = field(default_factory=list)


_START_RUN = "insert into ldap_sync_runs (forced) values ($1) returning id"
_FINISH_RUN = """
update ldap_sync_runs set
    finished_at = now(), outcome = $2, users_read = $3, groups_read = $4, added = $5,
    changed = $6, removed = $7, skipped = $8, skipped_records = $9, warnings = $10, error = $11
where id = $1
"""
_LAST_STARTED = "select max(started_at) from ldap_sync_runs where outcome <> 'running'"
_MANAGED_COUNTS = """
select kind, count(*) from entities where managed_by = $1 and kind in ('User', 'Group')
group by kind
"""


async def sync_directory(
    db: Database,
    config: DirectoryConfig,
    *,
    brake: float,
    force: bool = False,
    progress: Progress | None = None,
    only_if_older_than: float | None = None,
) -> SyncReport:
    """Run one sync under the lock. ``only_if_older_than`` (seconds) skips a run when another
    replica ran one that recently, so N replicas sync once per interval, not N times."""
    async with db.try_lock(LOCK_KEY) as held:
        if not held:
            raise SyncInProgress("another directory sync is running")
        if only_if_older_than is not None:
            last: datetime | None = await db.fetchval(_LAST_STARTED)
            now: datetime = await db.fetchval("select now()")
            if last is not None and (now - last).total_seconds() < only_if_older_than:
                return SyncReport(run_id=0, outcome="not-due")
        return await _run(db, config, brake=brake, force=force, progress=progress)


async def _run(
    db: Database, config: DirectoryConfig, *, brake: float, force: bool, progress: Progress | None
) -> SyncReport:
    started = time.perf_counter()
    report = SyncReport(run_id=await db.fetchval(_START_RUN, force), outcome="failed", forced=force)
    try:
        raw_users, raw_groups = await read_directory(config, progress)
        report.users_read, report.groups_read = len(raw_users), len(raw_groups)
        entities = _entities(raw_users, raw_groups, config, report)
        if progress is not None:
            progress("writing", len(entities))
        batch = ParsedBatch([(ORIGIN, e) for e in entities], [], {ORIGIN})
        result = await apply_batch(
            db,
            batch,
            managed_by=MANAGED_BY,
            replaces=frozenset({"catalog"}),
            guard=None if force else _brake(brake),
        )
        report.skipped += [_skipped(e) for e in result.errors]
        report.added, report.changed = len(result.created), len(result.updated)
        report.removed = len(result.deleted)
        report.changed_refs = result.affected
        report.outcome = "succeeded"
    except SyncBraked as exc:
        report.outcome, report.error = "braked", str(exc)
        log.warning("directory sync stopped by the deletion brake", extra={"reason": str(exc)})
    except Exception as exc:
        report.outcome, report.error = "failed", str(exc) or type(exc).__name__
        log.exception("directory sync failed")
        raise
    finally:
        report.duration = time.perf_counter() - started
        await db.execute(
            _FINISH_RUN,
            report.run_id,
            report.outcome,
            report.users_read,
            report.groups_read,
            report.added,
            report.changed,
            report.removed,
            len(report.skipped),
            [{"dn": s.dn, "reason": s.reason} for s in report.skipped[:1000]],
            report.warnings[:1000],
            report.error,
        )
    return report


def _brake(share: float) -> Callable[[Executor, list[tuple[str, str]]], Any]:
    async def guard(tx: Executor, doomed: list[tuple[str, str]]) -> None:
        if not doomed:
            return
        have = {r["kind"]: r["count"] for r in await tx.fetch(_MANAGED_COUNTS, MANAGED_BY)}
        for kind, label in (("User", "users"), ("Group", "groups")):
            losing = sum(1 for _, k in doomed if k == kind)
            existing = have.get(kind, 0)
            if existing and losing / existing > share:
                raise SyncBraked(
                    f"the directory sync would delete {losing} of {existing} {label} "
                    f"({losing / existing:.0%}, more than the {share:.0%} brake); nothing was "
                    "changed. If the directory really lost them, run `atrium sync ldap --force`."
                )

    return guard


def _skipped(error: DocumentError) -> Skipped:
    return Skipped(error.location, error.message)


def _entities(
    raw_users: list[RawEntry],
    raw_groups: list[RawEntry],
    config: DirectoryConfig,
    report: SyncReport,
) -> list[Entity]:
    users, skipped_users = parse_users(raw_users, config.attributes)
    groups, skipped_groups = parse_groups(raw_groups, config.attributes)
    report.skipped += skipped_users + skipped_groups
    user_by_dn = {u.dn: u for u in users}
    group_by_dn = {g.dn: g for g in groups}

    # Memberships come from both sides, for directories that keep only one. Either side may
    # list direct memberships only (Active Directory) or expand nesting (OpenLDAP's dynlist);
    # a group implied by another one of the same record's groups is dropped, which leaves the
    # direct memberships, and the transitive answers the same.
    listed: dict[str, set[str]] = {dn: set() for dn in user_by_dn}  # member dn → group dns
    listed.update({dn: set() for dn in group_by_dn})
    for group in groups:
        for dn in group.members:
            if dn in listed:
                listed[dn].add(group.dn)
    claimed = {u.dn: u.member_of & group_by_dn.keys() for u in users}
    claimed.update({g.dn: g.member_of & group_by_dn.keys() for g in groups})
    above = _ancestors({dn: listed[dn] | claimed[dn] for dn in group_by_dn})
    members: dict[str, set[str]] = {g.dn: set() for g in groups}  # group dn → user names
    children: dict[str, set[str]] = {g.dn: set() for g in groups}  # group dn → group names
    groups_of: dict[str, set[str]] = {u.dn: set() for u in users}  # user dn → group names
    for dn, direct in listed.items():
        for parent in _not_implied(direct | claimed[dn], above, dn):
            if dn in user_by_dn:
                members[parent].add(user_by_dn[dn].name)
                groups_of[dn].add(group_by_dn[parent].name)
            elif parent != dn:
                children[parent].add(group_by_dn[dn].name)

    report.warnings += group_cycles({g.name: children[g.dn] for g in groups})
    documents: list[tuple[str, dict[str, Any]]] = [
        (u.dn, _user_document(u, groups_of[u.dn])) for u in users
    ]
    documents += [
        (g.dn, _group_document(g, config.group_type, members[g.dn], children[g.dn])) for g in groups
    ]
    entities = []
    for dn, doc in documents:
        try:
            entities.append(validate_entity(doc))
        except EntityValidationError as exc:
            report.skipped.append(Skipped(dn, f"{exc.field}: {exc.message}"))
    return entities


def _ancestors(parents: dict[str, set[str]]) -> dict[str, set[str]]:
    """Every group above each group, through any number of levels; cycles end the walk."""
    found: dict[str, set[str]] = {}
    for start in parents:
        seen: set[str] = set()
        pending = list(parents[start])
        while pending:
            dn = pending.pop()
            if dn not in seen:
                seen.add(dn)
                pending.extend(parents.get(dn, ()))
        found[start] = seen
    return found


def _not_implied(groups: set[str], above: dict[str, set[str]], member: str) -> set[str]:
    """The groups of ``member`` not strictly above another of them. A group that reaches the
    member itself (a cycle through it) implies nothing: its way up may pass through the member."""
    return {
        g
        for g in groups
        if not any(
            g in above.get(other, ())
            and other not in above.get(g, ())
            and member not in above.get(other, ())
            for other in groups
            if other != g
        )
    }


def _annotations(dn: str, uid: str | None) -> dict[str, str]:
    found = {DN_ANNOTATION: dn}
    if uid:
        found[UID_ANNOTATION] = uid
    return found


def _profile(display_name: str | None, email: str | None) -> dict[str, str]:
    # Backstage's schema has no empty profile fields: an empty attribute is left out.
    return {k: v for k, v in (("displayName", display_name), ("email", email)) if v}


def _user_document(user: DirectoryUser, groups: set[str]) -> dict[str, Any]:
    # Both sides of a membership, as Backstage's own directory readers write them: tools
    # reading a user's spec.memberOf find its groups there.
    return {
        "apiVersion": "backstage.io/v1alpha1",
        "kind": "User",
        "metadata": {"name": user.name, "annotations": _annotations(user.dn, user.uid)},
        "spec": {
            "profile": _profile(user.display_name, user.email),
            "memberOf": sorted(groups),
        },
    }


def _group_document(
    group: DirectoryGroup, group_type: str, members: set[str], children: set[str]
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": group.name,
        "annotations": _annotations(group.dn, group.uid),
    }
    if group.description:
        metadata["description"] = group.description
    return {
        "apiVersion": "backstage.io/v1alpha1",
        "kind": "Group",
        "metadata": metadata,
        "spec": {
            "type": group_type,
            "profile": _profile(group.display_name, group.email),
            "children": sorted(children),
            "members": sorted(members),
        },
    }


def group_cycles(children: dict[str, set[str]]) -> list[str]:
    """Each cycle of group nesting, as a sentence naming its groups (Tarjan's SCC, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(children):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(children.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                child = pending.pop(0)
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(children.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in children.get(node, ()):
                    found.append(sorted(component))
    return [
        f"groups {', '.join(c)} contain each other (a nesting cycle); transitive queries "
        "stop at the cycle"
        for c in sorted(found)
    ]


def _json(value: object) -> str:
    return orjson.dumps(value).decode()
