"""Where change events may go: the SSRF check of a hook's URL, when the hook is registered and
again before each batch of deliveries.

Atrium posts catalog data from inside the network to a URL an admin typed, so that URL must not
reach what only the inside can: loopback, private and shared networks, link-local addresses
(cloud metadata at 169.254.169.254), multicast, reserved and unspecified ones, or any of those
wrapped in IPv6 (IPv4-mapped, 6to4, NAT64, Teredo). A host is refused when any of its addresses
is one of them, unless a network of ``ATRIUM_CHANGE_HOOKS_ALLOWED_NETWORKS`` holds it (a
receiver inside, allowed on purpose). The name is resolved here and deliveries connect to the
address checked, so a name that resolves elsewhere a moment later (DNS rebinding) cannot slip
past the check. Also refused: schemes other than http and https, and credentials in the URL
(admins see the URL listed; the secret is what authenticates Atrium to the receiver).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address
from typing import Final, TypeAlias
from urllib.parse import urlsplit

import httpx

from sources.errors import ChangeHookError

__all__ = ["IPAddress", "IPNetwork", "Target", "check_url", "resolve_target"]

IPAddress: TypeAlias = IPv4Address | IPv6Address
IPNetwork: TypeAlias = IPv4Network | IPv6Network

MAX_URL: Final = 2048
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_NAT64: Final = IPv6Network("64:ff9b::/96")


@dataclass(frozen=True, slots=True)
class Target:
    """A hook's URL, checked: ``address`` is the one to connect to."""

    url: str
    scheme: str
    host: str  # lowercase, without brackets
    port: int
    address: IPAddress

    @property
    def request_url(self) -> str:
        """The URL as a request spells it (the host in ASCII, the rest percent-encoded), as
        check_url's parser accepted it; connections go to ``address`` whatever the host
        resolves to by then (sources.changes.delivery)."""
        return str(httpx.URL(self.url))


def check_url(url: str) -> tuple[str, str, int]:
    """The scheme, host and port of a URL a hook may have; ChangeHookError says why not."""
    if len(url) > MAX_URL:
        raise ChangeHookError(f"url: longer than {MAX_URL} characters")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
        # The parser of Target.request_url, what deliveries request: it refuses what urlsplit
        # (and aiohttp's own, yarl) let through: control characters.
        httpx.URL(url.strip())
    except (ValueError, httpx.InvalidURL) as exc:
        raise ChangeHookError(f"url: {exc}") from None
    if parts.scheme not in _DEFAULT_PORTS:
        raise ChangeHookError("url: only http and https URLs can receive change events")
    if not parts.hostname:
        raise ChangeHookError("url: it names no host")
    if parts.username is not None or parts.password is not None:
        raise ChangeHookError(
            "url: credentials in the URL are refused (every admin sees it): the receiver "
            "authenticates Atrium by the signature made with the secret"
        )
    return parts.scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[parts.scheme]


async def resolve_target(url: str, allowed: Sequence[IPNetwork], within: float) -> Target:
    """Check ``url`` and every address its host resolves to now (within ``within``
    seconds); ChangeHookError says why it may not be posted to."""
    scheme, host, port = check_url(url)
    try:
        addresses = [ip_address(host)]
    except ValueError:
        addresses = await _resolve(host, port, within)
    for address in addresses:
        why = _refusal(address, allowed)
        if why is not None:
            raise ChangeHookError(
                f"url: {host} is {address}, {why}; change events go to public addresses "
                "unless ATRIUM_CHANGE_HOOKS_ALLOWED_NETWORKS allows it"
            )
    return Target(url.strip(), scheme, host, port, addresses[0])


async def _resolve(host: str, port: int, within: float) -> list[IPAddress]:
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(within):
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except TimeoutError:
        raise ChangeHookError(f"url: {host} was not resolved within {within:g} s") from None
    except OSError as exc:
        raise ChangeHookError(f"url: {host} does not resolve ({exc.strerror or exc})") from None
    found: list[IPAddress] = []
    for *_, sockaddr in infos:
        # An IPv6 scope (fe80::1%eth0) is not part of the address.
        address = ip_address(str(sockaddr[0]).partition("%")[0])
        if address not in found:
            found.append(address)
    if not found:
        raise ChangeHookError(f"url: {host} has no address")
    return found


def _refusal(address: IPAddress, allowed: Sequence[IPNetwork]) -> str | None:
    """Why ``address`` may not be posted to, or None."""
    if any(address in network for network in allowed):
        return None
    inner = _embedded_ipv4(address)
    if inner is not None:
        return None if _refusal(inner, allowed) is None else f"{inner} inside IPv6"
    if address.is_multicast:
        return "a multicast address"
    if not address.is_global:
        return "not a public address (loopback, private, link-local or reserved)"
    return None


def _embedded_ipv4(address: IPAddress) -> IPv4Address | None:
    """The IPv4 address an IPv6 one carries, where routers would deliver to it."""
    if address.version != 6:
        return None
    assert isinstance(address, IPv6Address)
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if address in _NAT64:
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return None
