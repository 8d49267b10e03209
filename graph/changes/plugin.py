"""Change events, registered through the public plugin API: the hooks' fields, the deliverer
(a job: one replica claims each round, and row locks share the work when rounds overlap), a
gauge of the outbox."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, Final

from graph.changes.fields import PLUGIN_ID, ChangeHookMutation, ChangeHookQuery
from graph.plugin import PluginBuilder
from sources.changes.delivery import Deliverer
from sources.changes.secrets import SecretBox
from sources.db import Database

__all__ = ["ChangesPlugin"]

_COUNTS: Final = "select state, count(*) from change_deliveries group by state"


class ChangesPlugin:
    id = PLUGIN_ID

    def setup(self, builder: PluginBuilder) -> None:
        builder.query(ChangeHookQuery)
        builder.mutation(ChangeHookMutation)
        settings = builder.settings
        key = settings.change_hooks_key

        @contextlib.asynccontextmanager
        async def lifespan(services: Any) -> AsyncIterator[Deliverer]:
            box = SecretBox(key.get_secret_value() if key is not None else None)
            # The app's pool, with a statement count of its own: what the deliverer sends
            # every interval is not counted with requests' statements (the SQL-per-request
            # figures and tests read that count). The app's Database closes the pool.
            database = Database(services.database.pool)
            deliverer = Deliverer(database, settings.change_delivery, box)
            try:
                yield deliverer
            finally:
                await deliverer.aclose()

        builder.lifespan(lifespan)
        builder.job("deliver", _deliver, interval=settings.change_hooks_interval)
        builder.gauge(
            "change_deliveries",
            "Change events waiting to be delivered (pending) or given up on (failed)",
            ("state",),
            _deliveries,
        )


async def _deliver(services: Any) -> None:
    deliverer: Deliverer = services.extras[PLUGIN_ID]
    await deliverer.deliver_due()


async def _deliveries(services: Any) -> dict[tuple[str, ...], float]:
    counts = {"pending": 0.0, "failed": 0.0}
    for state, count in await services.database.fetch(_COUNTS):
        counts[state] = float(count)
    return {(state,): count for state, count in counts.items()}
