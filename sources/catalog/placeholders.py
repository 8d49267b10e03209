"""Backstage's placeholders in catalog files: ``$text``, ``$json`` and ``$yaml``.

A mapping with exactly one key, ``$text``, ``$json`` or ``$yaml``, anywhere in a document is
replaced by what its value names: a file relative to the catalog file (or an absolute
``http(s)`` URL), as text, or parsed as JSON or YAML. Mappings with other ``$`` keys (JSON
Schema's ``$ref``, say) are left alone, as Backstage leaves them.

Better than Backstage, which drops the whole entity when a placeholder cannot be read: the
entity is kept (its owner, system and relations matter more than its spec text), the value is
left empty, and the reason is recorded against the field (``spec.definition``: why). Every
import reads placeholders afresh, so the next one fills in what has become readable.

What may be read: files inside the tree being imported (a path may not climb out of it, nor
a symlink lead out), and URLs on the hosts a ``FetchPolicy`` allows, within a timeout and a
size limit, redirects included. Each file or URL is read once per import.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

import yaml

from sources.text import unstorable

__all__ = ["FetchPolicy", "Placeholders", "Substituted", "raw_url"]

KINDS: Final = ("text", "json", "yaml")
_MAX_REDIRECTS: Final = 3


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """Which URLs an import may read, and how long and how much."""

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


@dataclass(slots=True)
class Substituted:
    """A document with its placeholders replaced, and what could not be, by field path."""

    document: Any
    unavailable: dict[str, str] = field(default_factory=dict)


class Placeholders:
    """Reads for one import: each file or URL once, whatever number of documents name it."""

    def __init__(self, policy: FetchPolicy | None = None) -> None:
        self.policy = policy or FetchPolicy()
        self._texts: dict[str, str | Unreadable] = {}
        self._client: Any = None  # an httpx.Client, made when a URL is first read
        # Files placeholders named (resolved): they are definitions, not catalog files.
        self.files_read: set[Path] = set()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> Placeholders:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def substitute(self, document: Any, base: Path | None, root: Path | None) -> Substituted:
        """``document`` with its placeholders replaced. ``base`` is the catalog file that holds
        it and ``root`` the tree being imported (None for text sent through the API: then only
        URLs can be read)."""
        found = Substituted(document)
        found.document = self._walk(document, "", base, root, found.unavailable)
        return found

    def _walk(
        self, value: Any, path: str, base: Path | None, root: Path | None, out: dict[str, str]
    ) -> Any:
        if isinstance(value, list):
            return [
                self._walk(item, f"{path}[{i}]", base, root, out) for i, item in enumerate(value)
            ]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            [(key, target)] = value.items()
            if isinstance(key, str) and key.startswith("$") and key[1:] in KINDS:
                try:
                    return self._resolve(key[1:], target, base, root)
                except Unreadable as exc:
                    out[path or "(document)"] = f"${key[1:]} {target!r}: {exc}"
                    return None
        return {
            k: self._walk(v, f"{path}.{k}" if path else str(k), base, root, out)
            for k, v in value.items()
        }

    def _resolve(self, kind: str, target: Any, base: Path | None, root: Path | None) -> Any:
        if not isinstance(target, str) or not target:
            raise Unreadable("expected a relative path or an absolute http(s) URL")
        text = self._read(target, base, root)
        if kind == "text":
            return text
        if kind == "json":
            try:
                return json.loads(text)
            except ValueError as exc:
                raise Unreadable(f"is not valid JSON: {exc}") from None
        try:
            documents = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as exc:
            raise Unreadable(f"is not valid YAML: {exc}") from None
        if len(documents) != 1:
            raise Unreadable(f"expected exactly one YAML document, found {len(documents)}")
        return _json_ready(documents[0])

    def _read(self, target: str, base: Path | None, root: Path | None) -> str:
        scheme = urlsplit(target).scheme.lower()
        read: Callable[[], str]
        if scheme in ("http", "https"):
            key, read = f"url {target}", lambda: self._fetch(target)
        elif scheme and len(scheme) > 1:  # not a Windows drive letter
            raise Unreadable(f"{scheme}: URLs are not read; use http(s) or a relative path")
        elif base is None or root is None:
            raise Unreadable(
                "a relative path needs a catalog file to be relative to; text sent through "
                "the API can only name absolute http(s) URLs"
            )
        else:
            path = _inside(base.parent / target, root)
            self.files_read.add(path)
            key, read = f"file {path}", lambda: _read_file(path)
        if key not in self._texts:
            try:
                self._texts[key] = read()
            except Unreadable as exc:
                self._texts[key] = exc
        found = self._texts[key]
        if isinstance(found, Unreadable):
            raise found
        why = unstorable(found)
        if why is not None:
            raise Unreadable(f"{why}, which cannot be stored")
        return found

    def _fetch(self, url: str) -> str:
        import httpx  # only imports that read URLs pay for it

        policy = self.policy
        if self._client is None:
            self._client = httpx.Client(timeout=policy.timeout, follow_redirects=False)
        deadline = time.monotonic() + policy.timeout
        host = urlsplit(url).hostname or ""
        if policy.allows(host):
            url = raw_url(url)  # the file, not the page showing it; allowed as its page is
        for _ in range(_MAX_REDIRECTS + 1):
            host = urlsplit(url).hostname or ""
            if not policy.allows(host) and not _raw_of_allowed(url, policy):
                raise Unreadable(
                    f"reading from {host or 'that URL'} is not allowed "
                    "(ATRIUM_CATALOG_FETCH_HOSTS names the hosts imports may read)"
                )
            try:
                with self._client.stream("GET", url) as response:
                    if response.is_redirect and "location" in response.headers:
                        url = urljoin(url, response.headers["location"])
                        continue
                    if response.status_code != 200:
                        raise Unreadable(f"answered HTTP {response.status_code}")
                    body = bytearray()
                    for chunk in response.iter_bytes():
                        body += chunk
                        if len(body) > policy.max_bytes:
                            raise Unreadable(f"is larger than {policy.max_bytes:,} bytes")
                        if time.monotonic() > deadline:
                            raise Unreadable(f"took longer than {policy.timeout:g} s")
            except httpx.TimeoutException:
                raise Unreadable(f"did not answer within {policy.timeout:g} s") from None
            except httpx.HTTPError as exc:
                raise Unreadable(f"could not be read: {exc or type(exc).__name__}") from None
            return _decode(bytes(body))
        raise Unreadable(f"redirected more than {_MAX_REDIRECTS} times")


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


def _inside(path: Path, root: Path) -> Path:
    """``path`` with symlinks resolved, if it lies inside ``root``."""
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise Unreadable("lies outside the tree being imported")
    return resolved


def _read_file(path: Path) -> str:
    try:
        return _decode(path.read_bytes())
    except FileNotFoundError:
        raise Unreadable("no such file") from None
    except IsADirectoryError:
        raise Unreadable("is a directory") from None
    except OSError as exc:
        raise Unreadable(f"cannot be read: {exc.strerror}") from None


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("is not UTF-8 text") from None


def _json_ready(value: Any) -> Any:
    """YAML's dates and other non-JSON scalars as text, as entities are JSON."""
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_ready(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
