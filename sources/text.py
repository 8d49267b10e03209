"""What PostgreSQL cannot store in text or jsonb: the NUL character, and lone surrogates (no
UTF-8 spelling at all). Inputs holding them are refused before any SQL, or, where the attempt
itself must be kept (the audit log), written with those characters spelled out."""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["spelled_out", "unstorable"]

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_UNSTORABLE: Final = re.compile("[\x00\ud800-\udfff]")


def unstorable(text: str) -> str | None:
    """Why PostgreSQL cannot store ``text``, or None when it can."""
    if "\x00" in text:
        return "holds a NUL character (U+0000)"
    if not text.isascii() and _SURROGATE.search(text):
        return "holds a lone surrogate (not a Unicode character)"
    return None


def spelled_out(value: Any) -> Any:
    """``value`` (strings, lists, mappings) with NUL and lone surrogates written as ``\\u0000``
    escapes: storable, and still saying what was sent."""
    if isinstance(value, str):
        if "\x00" not in value and (value.isascii() or not _SURROGATE.search(value)):
            return value
        return _UNSTORABLE.sub(lambda m: f"\\u{ord(m[0]):04x}", value)
    if isinstance(value, dict):
        return {spelled_out(k): spelled_out(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [spelled_out(v) for v in value]
    return value
