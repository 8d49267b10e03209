"""Type aliases shared across the HTTP side of Atrium (ASGI's, as Starlette spells them)."""

from __future__ import annotations

from starlette.types import Message, Receive, Scope, Send

__all__ = ["Message", "Receive", "Scope", "Send"]
