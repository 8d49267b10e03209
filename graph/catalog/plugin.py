"""The catalog, registered through the public plugin API."""

from __future__ import annotations

from graph.catalog.fields import CatalogMutation, catalog_query
from graph.catalog.stars import StarMutation
from graph.catalog.types import ENTITY_TYPES
from graph.plugin import PluginBuilder
from loaders.catalog import entity_by_ref_loader, related_refs_loader, relations_by_ref_loader
from loaders.stars import starred_loader

__all__ = ["CatalogPlugin"]


class CatalogPlugin:
    id = "catalog"

    def setup(self, builder: PluginBuilder) -> None:
        builder.query(catalog_query())
        builder.mutation(CatalogMutation)
        builder.mutation(StarMutation)
        builder.types(*ENTITY_TYPES)
        builder.loader("entityByRef", entity_by_ref_loader)
        builder.loader("relatedRefs", related_refs_loader)
        builder.loader("relationsByRef", relations_by_ref_loader)
        builder.loader("starred", starred_loader)
