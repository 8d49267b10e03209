"""A change hook's connections: aiohttp's client, pinned to the address that was checked.

aiohttp's HTTP parser is C, and its pool takes a kept connection without polling every other
one, as httpx's did on each request (a third of a delivery's CPU). Each hook has a pool of its
own whose resolver answers the hook's host name with the address that was checked
(``sources.changes.targets``) and nothing else: the connection goes where the check said while
TLS still names and verifies the host. Certificates are checked against the system's trusted
authorities (``SSL_CERT_FILE`` names others); no proxy is used.

``sources.changes.delivery`` imports this module when it serves its first hook: importing
aiohttp takes a fifth of a second, which every command and server that delivers nothing would
pay at start.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import Final

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from sources.changes.targets import Target

__all__ = ["HookClient"]

_ANSWER_BYTES: Final = 64 * 1024  # an answer read to its end, for its connection's sake


class _Pinned(AbstractResolver):
    """A hook pool's resolver: its host is at the address that was checked (a pool is made for
    one target, and follows no redirect to another host)."""

    def __init__(self, target: Target) -> None:
        self._target = target

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        address = self._target.address
        return [
            ResolveResult(
                hostname=host,
                host=str(address),
                port=port,
                family=socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        return None


class HookClient:
    """Posts to one checked target over at most ``limit`` connections, each request given
    ``within`` seconds, connecting included; ``close`` when done. Raises ValueError for a URL
    the check accepted and the client cannot spell."""

    def __init__(
        self, target: Target, limit: int, within: float, tls: ssl.SSLContext | None
    ) -> None:
        self.within = within
        # Spelt as the check accepted it; the pool's resolver pins the address (_Pinned).
        self.url = URL(target.request_url, encoded=True)
        connector = aiohttp.TCPConnector(
            limit=limit,
            resolver=_Pinned(target),
            use_dns_cache=False,
            ssl=tls if tls is not None else True,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None),  # each request's bound is post's
            auto_decompress=False,  # the answer is dropped unread
            trust_env=False,
        )

    async def close(self) -> None:
        await self._session.close()

    async def post(self, body: bytes, headers: dict[str, str]) -> int | str:
        """The answer's status, or why there was none."""
        status: int | None = None
        try:
            async with asyncio.timeout(self.within):
                async with self._session.post(
                    self.url, data=body, headers=headers, allow_redirects=False
                ) as response:
                    status = response.status
                    await _read_answer(response)
        except TimeoutError:
            if status is None:
                return f"no answer within {self.within:g} s"
        except aiohttp.ClientError as exc:
            if status is None:
                return f"could not be reached: {str(exc) or type(exc).__name__}"
        assert status is not None
        return status


async def _read_answer(response: aiohttp.ClientResponse) -> None:
    """Read the answer's body, unless it is long, and drop it: a connection whose answer was
    read to its end takes the next delivery, where one left unread is closed (a connection per
    delivery, with its handshakes). What the body says, or a failure to read it, changes
    nothing: the status was the answer."""
    read = 0
    async for chunk in response.content.iter_any():
        read += len(chunk)
        if read > _ANSWER_BYTES:
            return  # not worth its connection
