"""Ownership, registered through the public plugin API: loaders, fields, the sync job, gauges."""

from __future__ import annotations

import logging
from typing import Any

from graph.ownership.directory import directory_config
from graph.ownership.fields import OwnershipQuery
from graph.ownership.types import ViewerType
from graph.plugin import PluginBuilder
from loaders.ownership import (
    ancestors_loader,
    descendants_loader,
    groups_of_loader,
    members_of_loader,
)
from sources.ldap.runs import run_metrics
from sources.ldap.sync import SyncInProgress, sync_directory

__all__ = ["OwnershipPlugin"]

log = logging.getLogger("atrium.ownership")

# How often each replica checks whether a sync is due; the interval itself is a setting.
CHECK_EVERY = 60.0


class OwnershipPlugin:
    id = "ownership"

    def setup(self, builder: PluginBuilder) -> None:
        builder.query(OwnershipQuery)
        builder.types(ViewerType)  # other plugins may extend it (attention does)
        builder.loader("groupsOf", groups_of_loader)
        builder.loader("membersOf", members_of_loader)
        builder.loader("ancestors", ancestors_loader)
        builder.loader("descendants", descendants_loader)
        builder.gauge(
            "ldap_sync_runs", "Directory sync runs recorded, by outcome", ("outcome",), _runs
        )
        builder.gauge(
            "ldap_sync_last",
            "The latest finished directory sync: finish time (unix seconds), "
            "duration (seconds) and changes",
            ("figure",),
            _last,
        )
        settings = builder.settings
        if settings.ldap_url:
            config = directory_config(settings)
            interval = settings.ldap_sync_interval

            async def sync(services: Any) -> None:
                try:
                    report = await sync_directory(
                        services.database,
                        config,
                        brake=settings.ldap_deletion_brake,
                        only_if_older_than=interval,
                    )
                except SyncInProgress:
                    return
                await services.invalidate(report.changed_refs)
                if report.outcome != "not-due":
                    log.info(
                        "directory sync finished",
                        extra={
                            "outcome": report.outcome,
                            "added": report.added,
                            "changed": report.changed,
                            "removed": report.removed,
                            "skipped": len(report.skipped),
                            "duration_s": round(report.duration, 2),
                        },
                    )

            builder.job("ldapSync", sync, interval=min(CHECK_EVERY, interval))


async def _runs(services: Any) -> dict[tuple[str, ...], float]:
    figures = await run_metrics(services.database)
    return {(outcome,): float(n) for outcome, n in figures["by_outcome"].items()}


async def _last(services: Any) -> dict[tuple[str, ...], float]:
    figures = await run_metrics(services.database)
    last = figures["last"]
    found: dict[tuple[str, ...], float] = {}
    if last is not None:
        found[("finished",)] = float(last["finished"])
        found[("duration_seconds",)] = float(last["duration"])
        for key in ("added", "changed", "removed", "skipped"):
            found[(key,)] = float(last[key])
    if figures["last_success"] is not None:
        found[("last_success",)] = float(figures["last_success"])
    return found
