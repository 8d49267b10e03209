"""Hook secrets at rest: sealed under a key only the replicas hold, opened to sign.

A hook's secret signs every delivery (HMAC-SHA256 of the body), so Atrium must be able to read
it back: a hash, as API tokens are kept, would not do. With ``ATRIUM_CHANGE_HOOKS_KEY`` set, a
secret is sealed with AES-256-GCM under a key derived from that setting (HKDF-SHA256), with the
hook's URL as associated data: the database alone (a dump, a backup, a read-only role) reveals
no secret, and a sealed secret copied onto a row with another URL does not open. Without the
key (development) a secret is stored as given; production refuses to register a hook then.
"""

from __future__ import annotations

import os
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from sources.errors import ChangeHookError

__all__ = ["SecretBox"]

_INFO: Final = b"atrium change hook secrets"
_NONCE_BYTES: Final = 12


class SecretBox:
    """Seals and opens hook secrets; ``key`` is the setting's value, None when unset."""

    def __init__(self, key: str | None) -> None:
        self._aead: AESGCM | None = None
        if key:
            derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(
                key.encode()
            )
            self._aead = AESGCM(derived)

    @property
    def sealing(self) -> bool:
        return self._aead is not None

    def seal(self, secret: str, url: str) -> tuple[bytes, bool]:
        """What to store for ``secret`` of a hook posting to ``url``, and whether it is sealed."""
        if self._aead is None:
            return secret.encode(), False
        nonce = os.urandom(_NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, secret.encode(), url.encode()), True

    def open(self, stored: bytes, sealed: bool, url: str) -> str:
        """The secret ``seal`` stored; ChangeHookError when this key cannot open it."""
        if not sealed:
            return stored.decode()
        if self._aead is None:
            raise ChangeHookError(
                "the hook's secret is sealed and ATRIUM_CHANGE_HOOKS_KEY is not set"
            )
        nonce, sealed_text = stored[:_NONCE_BYTES], stored[_NONCE_BYTES:]
        try:
            return self._aead.decrypt(nonce, sealed_text, url.encode()).decode()
        except InvalidTag:
            raise ChangeHookError(
                "the hook's secret does not open with ATRIUM_CHANGE_HOOKS_KEY (was the key "
                "changed? delete the hook and register it again)"
            ) from None
