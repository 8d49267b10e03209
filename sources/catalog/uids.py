"""Backstage's ``metadata.uid``: a UUID naming one entity for as long as it exists.

Atrium's entities already have such an identity, the row's ``id`` (kept when an entity is
updated, new when it is deleted and imported again), so the uid spells it as a UUID instead of
storing another: version 8 (custom), the first six bytes "atrium", the id in the last 62 bits.
Reading a uid back is arithmetic, and a lookup by uid is one by primary key.
"""

from __future__ import annotations

import uuid
from typing import Final

__all__ = ["entity_id_of", "entity_uid"]

# "atrium", then the version nibble 8; the variant bits 10 start the low half.
_HIGH: Final = 0x61747269756D_8000 << 64 | 0b10 << 62
_HIGH_MASK: Final = (2**128 - 1) ^ (2**62 - 1)
_ID_MASK: Final = 2**62 - 1


def entity_uid(entity_id: int) -> str:
    return str(uuid.UUID(int=_HIGH | entity_id))


def entity_id_of(uid: str) -> int | None:
    """The entity id a uid spells; None for any text that is not a uid Atrium gives."""
    if len(uid) > 45:
        return None
    try:
        value = uuid.UUID(uid).int
    except ValueError:
        return None
    if value & _HIGH_MASK != _HIGH:
        return None
    return value & _ID_MASK
