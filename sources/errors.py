"""Errors raised by Atrium's sources.

AtriumError
├── DatabaseUnavailable       the database cannot be reached or started
├── MigrationError            a migration failed, or an applied one was changed
├── ChangeHookError           a change hook that cannot be registered, or whose target or
│                             secret cannot be used
└── CatalogError
    ├── InvalidRef            an entity reference that does not parse
    ├── NotFound              no entity has the reference a change names
    └── EntityValidationError an entity document that breaks the model's rules
"""

from __future__ import annotations

__all__ = [
    "AtriumError",
    "CatalogError",
    "ChangeHookError",
    "DatabaseUnavailable",
    "DirectoryUnavailable",
    "EntityValidationError",
    "InvalidRef",
    "MigrationError",
    "NotAuthenticated",
    "NotAuthorized",
    "NotFound",
    "SyncBraked",
]


class AtriumError(Exception):
    """Base of every error Atrium raises on purpose."""


class DatabaseUnavailable(AtriumError):
    pass


class MigrationError(AtriumError):
    pass


class ChangeHookError(AtriumError):
    pass


class DirectoryUnavailable(AtriumError):
    pass


class SyncBraked(AtriumError):
    pass


class NotAuthorized(AtriumError):
    pass


class NotAuthenticated(NotAuthorized):
    pass


class CatalogError(AtriumError):
    pass


class InvalidRef(CatalogError):
    pass


class NotFound(CatalogError):
    pass


class EntityValidationError(CatalogError):
    """``field`` is a dotted path into the document, such as ``metadata.name``; ``difference``
    names the deliberate difference from Backstage's model (sources.catalog.differences) when
    the document is refused for one."""

    def __init__(self, field: str, message: str, difference: str | None = None) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.difference = difference
