"""A component's deploys as they change, one upstream per component for every subscriber.

The ``componentDeploys`` subscriptions of one component share one change listener and one
read per change (``graph.plugin.Fanout``): the read finds the deploys changed since the last
one and publishes each once; every subscriber's mailbox takes it. A subscriber also reads the
last minute's deploys for itself when it comes (what moved on while it was subscribing), after
joining the fan-out, so nothing falls between the two, and skips what that catch-up sent.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterable
from datetime import datetime, timedelta
from typing import Any, Final

from graph.plugin import EVERYTHING, Fanout, Mailbox, follow_changes
from plugins.deployments.store import DEPLOY_COLUMNS, DeployRow, deploys_key

__all__ = ["LOOK_BACK", "DeployFeed", "deploy_fanout", "follow_component"]

LOOK_BACK: Final = timedelta(minutes=1)

_CHANGED_SINCE: Final = (
    f"select {DEPLOY_COLUMNS}, d.updated_at from deployment_deploys d"
    " join deployment_releases r on r.id = d.release_id"
    " where d.component_ref = $1 and d.updated_at >= $2"
    " order by d.updated_at, d.id"
)

Seen = tuple[int, datetime]


class DeployFeed:
    """The upstream of one component: its change listener, in place from construction."""

    def __init__(self, services: Any, ref: str) -> None:
        self._db = services.database
        self._ref = ref
        self._key = deploys_key(ref)
        self._changes = follow_changes(services, self._key)
        self.reads = 0  # statements run (what tests count)

    def backlog(self) -> Iterable[tuple[Seen, DeployRow]]:
        return ()

    async def run(self, publish: Callable[[tuple[Seen, DeployRow]], None]) -> None:
        try:
            since = await self._db.fetchval("select now()") - LOOK_BACK
            seen: set[Seen] = set()
            async for keys in self._changes:
                if self._key not in keys and EVERYTHING not in keys:
                    continue
                self.reads += 1
                rows = await self._db.fetch(_CHANGED_SINCE, self._ref, since)
                for row in rows:
                    # A transaction's now() is when it began: look back to that, and skip what
                    # was already published.
                    item = (row["id"], row["updated_at"])
                    if item not in seen:
                        seen.add(item)
                        publish((item, DeployRow.of(row)))
                if rows:  # what began more than a minute before the newest change is done
                    since = max(since, rows[-1]["updated_at"] - LOOK_BACK)
                    seen = {item for item in seen if item[1] >= since}
        finally:
            await self._changes.aclose()


def deploy_fanout(services: Any) -> Fanout[str, tuple[Seen, DeployRow]]:
    return Fanout(lambda ref: DeployFeed(services, ref), name="deploys of")


async def follow_component(
    fanout: Fanout[str, tuple[Seen, DeployRow]], db: Any, ref: str, limit: int
) -> AsyncGenerator[DeployRow, None]:
    """The component's deploys of the last minute, then each change as it comes."""
    box: Mailbox[tuple[Seen, DeployRow]] = Mailbox(limit)
    async with fanout.subscribe(ref, box.put, box.end):  # listening from here on
        since = await db.fetchval("select now()") - LOOK_BACK
        caught: set[Seen] = set()
        for row in await db.fetch(_CHANGED_SINCE, ref, since):
            caught.add((row["id"], row["updated_at"]))
            yield DeployRow.of(row)
        async for item, found in box:
            if item not in caught:
                yield found
