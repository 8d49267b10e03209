"""The deployments plugin's loaders: what a page asks of many stages at once, one statement a
batch (the plugin registers them under these names)."""

from __future__ import annotations

from typing import Final

from graph.plugin import DataLoader, LoaderServices
from plugins.deployments.queries import rollback_releases
from plugins.deployments.store import ReleaseRow

__all__ = ["ROLLBACK_LOADER", "RollbackKey", "rollback_loader"]

ROLLBACK_LOADER: Final = "deployments.rollback_to"

RollbackKey = tuple[str, str]  # component ref, stage


def rollback_loader(services: LoaderServices) -> DataLoader[RollbackKey, ReleaseRow | None]:
    """(component, stage) → the release a rollback there deploys now (``rollbackTo``)."""

    async def load(keys: list[RollbackKey]) -> list[ReleaseRow | None]:
        return await rollback_releases(services.db, keys)

    return DataLoader(load_fn=load)
