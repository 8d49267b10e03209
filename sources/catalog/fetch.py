"""Reading the URLs catalog placeholders name: only from allowed hosts, within a time and a
size, redirects checked hop by hop, several at once.

Blocking I/O (httpx's client, shared by worker threads): async code calls it from a thread, and
a fetch from a thread running an event loop is refused outright rather than stall the loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

from sources.text import unstorable

__all__ = ["FetchPolicy", "Fetcher", "Unreadable", "decode", "raw_url", "refuse_in_event_loop"]

_MAX_REDIRECTS: Final = 3
_AT_ONCE: Final = 8  # URLs fetched at the same time


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """Which URLs an import may read, and how long and how much (files: how much too)."""

    hosts: frozenset[str] = frozenset()  # host names; "*.example.com" for its subdomains
    timeout: float = 10.0
    max_bytes: int = 2 * 2**20

    def allows(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        for allowed in self.hosts:
            allowed = allowed.lower()
            if allowed == "*" or host == allowed:
                return True
            if allowed.startswith("*.") and host.endswith(allowed[1:]):
                return True
        return False


class Unreadable(Exception):
    """Why a placeholder's target could not be read or parsed."""


class Fetcher:
    """Reads URLs for one import with one connection pool; ``close`` when done."""

    def __init__(self, policy: FetchPolicy) -> None:
        self.policy = policy
        self._client: Any = None  # an httpx.Client, made when a URL is first read

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def fetch_all(self, urls: Iterable[str]) -> dict[str, str | Unreadable]:
        """Each URL's text, or why not, fetching several at once: the batch waits for the
        slowest URL and not for their sum."""
        urls = list(urls)
        if not urls:
            return {}
        refuse_in_event_loop()
        self._ensure_client()

        def one(url: str) -> str | Unreadable:
            try:
                return self.fetch(url)
            except Unreadable as exc:
                return exc

        with ThreadPoolExecutor(min(_AT_ONCE, len(urls))) as pool:
            return dict(zip(urls, pool.map(one, urls), strict=True))

    def _ensure_client(self) -> Any:
        import httpx  # only imports that read URLs pay for it

        if self._client is None:
            # Redirects are followed by hand: each hop's host must be allowed too.
            self._client = httpx.Client(timeout=self.policy.timeout, follow_redirects=False)
        return self._client

    def fetch(self, url: str) -> str:
        import httpx

        policy = self.policy
        deadline = time.monotonic() + policy.timeout
        if policy.allows(urlsplit(url).hostname or ""):
            url = raw_url(url)  # the file, not the page showing it; allowed as its page is
        for _ in range(_MAX_REDIRECTS + 1):
            host = urlsplit(url).hostname or ""
            if not policy.allows(host) and not _raw_of_allowed(url, policy):
                raise Unreadable(
                    f"reading from {host or 'that URL'} is not allowed "
                    "(ATRIUM_CATALOG_FETCH_HOSTS names the hosts imports may read)"
                )
            refuse_in_event_loop()
            client = self._ensure_client()
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise httpx.TimeoutException("deadline")
                with client.stream("GET", url, timeout=left) as response:
                    if response.is_redirect and "location" in response.headers:
                        url = urljoin(url, response.headers["location"])
                        continue
                    return decode(_body(response, policy, deadline))
            except httpx.TimeoutException:
                raise Unreadable(f"did not answer within {policy.timeout:g} s") from None
            except httpx.ConnectError as exc:
                raise Unreadable(f"could not connect: {exc or type(exc).__name__}") from None
            except httpx.HTTPError as exc:
                raise Unreadable(f"could not be read: {exc or type(exc).__name__}") from None
            except httpx.InvalidURL as exc:  # control characters and the like, or a redirect's
                raise Unreadable(f"is no URL that can be read: {exc}") from None
        raise Unreadable(f"redirected more than {_MAX_REDIRECTS} times")


def _body(response: Any, policy: FetchPolicy, deadline: float) -> bytes:
    """The body of a 200 answer, within the policy's size and time."""
    if response.status_code != 200:
        raise Unreadable(f"answered HTTP {response.status_code} {response.reason_phrase}".strip())
    too_large = f"is larger than {policy.max_bytes:,} bytes (ATRIUM_CATALOG_FETCH_MAX_BYTES)"
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > policy.max_bytes:
        raise Unreadable(too_large)
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > policy.max_bytes:
            raise Unreadable(too_large)
        if time.monotonic() > deadline:
            raise Unreadable(f"took longer than {policy.timeout:g} s")
    return bytes(body)


def refuse_in_event_loop() -> None:
    """Raises when the calling thread runs an event loop: a blocking read there would stall
    every request it serves."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        "catalog placeholders read URLs with blocking I/O: call this from a thread "
        "(asyncio.to_thread), not from the event loop"
    )


def raw_url(url: str) -> str:
    """The URL of a file's bytes for a URL of the page that shows it, as Backstage's GitHub
    and GitLab integrations read them: ``github.com/o/r/blob/ref/path`` is
    ``raw.githubusercontent.com/o/r/ref/path``, GitLab's ``/-/blob/`` is ``/-/raw/``."""
    parts = urlsplit(url)
    if parts.hostname == "github.com":
        segments = parts.path.split("/")
        if len(segments) > 4 and segments[3] == "blob":
            path = "/".join([*segments[:3], *segments[4:]])
            return f"https://raw.githubusercontent.com{path}"
    if "/-/blob/" in parts.path:
        return parts._replace(path=parts.path.replace("/-/blob/", "/-/raw/", 1)).geturl()
    return url


def _raw_of_allowed(url: str, policy: FetchPolicy) -> bool:
    # raw.githubusercontent.com serves what an allowed github.com names.
    return urlsplit(url).hostname == "raw.githubusercontent.com" and policy.allows("github.com")


def decode(raw: bytes) -> str:
    """UTF-8 text PostgreSQL can store, or Unreadable saying why not."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("is not UTF-8 text") from None
    why = unstorable(text)
    if why is not None:
        raise Unreadable(f"{why}, which cannot be stored")
    return text
