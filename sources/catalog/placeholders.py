"""Backstage's placeholders in catalog files: ``$text``, ``$json`` and ``$yaml``.

A mapping with exactly one key, ``$text``, ``$json`` or ``$yaml``, anywhere in a document is
replaced by what its value names: a file relative to the catalog file (or an absolute
``http(s)`` URL), as text, or parsed as JSON or YAML. As in Backstage's PlaceholderProcessor, a
mapping with any other ``$`` key (JSON Schema's ``$ref`` or ``$schema``, say) is left alone
whole, and placeholders inside what a placeholder read are not substituted again.

Better than Backstage, which drops the whole entity when a placeholder cannot be read: the
entity is kept (its owner, system and relations matter more than its spec text), the value is
left empty, and the reason is recorded against the field (``spec.definition``: why). Every
import reads placeholders afresh, so the next one fills in what has become readable.

What may be read: files inside the tree being imported (a path may not climb out of it, nor
a symlink lead out), and URLs on the hosts a ``FetchPolicy`` allows, within a timeout and a
size limit, redirects included. Each file or URL is read (and parsed) once per import, and the
URLs of a batch are fetched several at a time. Reading is blocking I/O: async code runs it in
a thread, and fetching a URL from a thread that runs an event loop is refused outright.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

import orjson

from sources.text import unstorable
from sources.yaml_json import InvalidYaml, load_yaml

__all__ = ["FetchPolicy", "Placeholders", "Substituted", "raw_url"]

KINDS: Final = ("text", "json", "yaml")
_MAX_REDIRECTS: Final = 3
_FETCHERS: Final = 8  # URLs fetched at once


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


@dataclass(slots=True)
class Substituted:
    """A document with its placeholders replaced. ``unavailable``: fields that could not be,
    by path, and why; ``filled``: fields that were, by path, and the placeholder that did it
    (so that a validation error on one can say where the value came from)."""

    document: Any
    unavailable: dict[str, str] = field(default_factory=dict)
    filled: dict[str, str] = field(default_factory=dict)


class Placeholders:
    """Reads for one import: each file or URL once, whatever number of documents name it.

    Values read are shared between the documents naming them: treat documents as read-only.
    """

    def __init__(self, policy: FetchPolicy | None = None) -> None:
        self.policy = policy or FetchPolicy()
        # Raw texts by file or URL, and parsed values by (kind, file or URL): or why not.
        self._texts: dict[str, str | Unreadable] = {}
        self._values: dict[tuple[str, str], Any] = {}
        self._client: Any = None  # an httpx.Client, made when a URL is first read
        # Paths resolved (symlinks followed), by (directory, target) and by root: resolving
        # costs system calls, and a big tree names the same few files from many documents.
        self._paths: dict[tuple[Path, str], Path] = {}
        self._roots: dict[Path, Path] = {}

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> Placeholders:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def prefetch(self, documents: Iterable[Any]) -> None:
        """Fetch every URL the documents' placeholders name, several at once, so that
        substituting them afterwards waits for the slowest URL and not for their sum."""
        urls = {
            target
            for document in documents
            for _, target in _placeholders_in(document)
            if isinstance(target, str) and _is_url(target) and f"url {target}" not in self._texts
        }
        fetchable = [url for url in urls if self.policy.allows(urlsplit(url).hostname or "")]
        if len(fetchable) < 2:
            return  # nothing to overlap: substitution reads it
        _refuse_in_event_loop()
        self._ensure_client()
        with ThreadPoolExecutor(min(_FETCHERS, len(fetchable))) as pool:
            texts = pool.map(lambda url: _outcome(lambda: self._fetch(url)), fetchable)
            for url, text in zip(fetchable, texts, strict=True):
                self._texts[f"url {url}"] = text

    def substitute(self, document: Any, base: Path | None, root: Path | None) -> Substituted:
        """``document`` with its placeholders replaced. ``base`` is the catalog file that holds
        it and ``root`` the tree being imported (None for text sent through the API: then only
        URLs can be read)."""
        found = Substituted(document)
        found.document = self._walk(document, "", base, root, found)
        return found

    def _walk(
        self, value: Any, path: str, base: Path | None, root: Path | None, out: Substituted
    ) -> Any:
        if isinstance(value, list):
            return [
                self._walk(item, f"{path}[{i}]", base, root, out) for i, item in enumerate(value)
            ]
        if not isinstance(value, dict):
            return value
        placeholder = _placeholder(value)
        if placeholder is not None:
            kind, target = placeholder
            where = path or "(document)"
            named = f"${kind} {_short(target)}"
            try:
                substituted = self._value(kind, target, base, root)
            except Unreadable as exc:
                out.unavailable[where] = f"{named}: {exc}"
                return None
            out.filled[where] = named
            return substituted
        if _has_dollar_key(value):
            return value  # someone else's $ syntax: left alone whole, as Backstage does
        return {
            k: self._walk(v, f"{path}.{k}" if path else str(k), base, root, out)
            for k, v in value.items()
        }

    def _value(self, kind: str, target: Any, base: Path | None, root: Path | None) -> Any:
        if not isinstance(target, str) or not target:
            raise Unreadable("expected a relative path or an absolute http(s) URL")
        key = self._key(target, base, root)
        if (kind, key) not in self._values:
            self._values[kind, key] = _outcome(lambda: _parse(kind, self._text(key)))
        value = self._values[kind, key]
        if isinstance(value, Unreadable):
            raise Unreadable(str(value))  # a fresh one: raising one again grows its traceback
        return value

    def _key(self, target: str, base: Path | None, root: Path | None) -> str:
        """What ``target`` names, as ``url …`` or ``file …``; raises when it may not be read."""
        scheme = urlsplit(target).scheme.lower()
        if scheme in ("http", "https"):
            return f"url {target}"
        if scheme and len(scheme) > 1:  # one letter is a Windows drive, not a scheme
            raise Unreadable(f"{scheme}: URLs are not read; use http(s) or a relative path")
        if base is None or root is None:
            raise Unreadable(
                "a relative path needs a catalog file to be relative to; text sent through "
                "the API has none, so it can only name absolute http(s) URLs"
            )
        return f"file {self._inside(base.parent, target, root)}"

    def files_named(self, document: Any, base: Path, root: Path) -> Iterable[Path]:
        """The files (resolved) that ``document``'s placeholders name inside ``root``."""
        for _, target in _placeholders_in(document):
            if isinstance(target, str) and target and not urlsplit(target).scheme:
                try:
                    path = self._inside(base.parent, target, root)
                except Unreadable:
                    continue
                yield path

    def _inside(self, directory: Path, target: str, root: Path) -> Path:
        """``directory / target`` with symlinks resolved, if it lies inside ``root``."""
        if root not in self._roots:
            self._roots[root] = root.resolve()
        if (directory, target) not in self._paths:
            self._paths[directory, target] = (directory / target).resolve()
        path = self._paths[directory, target]
        if not path.is_relative_to(self._roots[root]):
            raise Unreadable("lies outside the tree being imported")
        return path

    def _text(self, key: str) -> str:
        if key not in self._texts:
            what, _, where = key.partition(" ")
            read: Callable[[], str]
            if what == "url":
                read = lambda: self._fetch(where)  # noqa: E731
            else:
                read = lambda: _read_file(Path(where), self.policy.max_bytes)  # noqa: E731
            self._texts[key] = _outcome(read)
        text = self._texts[key]
        if isinstance(text, Unreadable):
            raise Unreadable(str(text))
        return text

    def _ensure_client(self) -> Any:
        import httpx  # only imports that read URLs pay for it

        if self._client is None:
            # Redirects are followed by hand: each hop's host must be allowed too.
            self._client = httpx.Client(timeout=self.policy.timeout, follow_redirects=False)
        return self._client

    def _fetch(self, url: str) -> str:
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
            _refuse_in_event_loop()
            client = self._ensure_client()
            left = deadline - time.monotonic()
            try:
                if left <= 0:
                    raise httpx.TimeoutException("deadline")
                with client.stream("GET", url, timeout=left) as response:
                    if response.is_redirect and "location" in response.headers:
                        url = urljoin(url, response.headers["location"])
                        continue
                    return _decode(_body(response, policy, deadline))
            except httpx.TimeoutException:
                raise Unreadable(f"did not answer within {policy.timeout:g} s") from None
            except httpx.ConnectError as exc:
                raise Unreadable(f"could not connect: {exc or type(exc).__name__}") from None
            except httpx.HTTPError as exc:
                raise Unreadable(f"could not be read: {exc or type(exc).__name__}") from None
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


def _refuse_in_event_loop() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        "catalog placeholders read URLs with blocking I/O: call this from a thread "
        "(asyncio.to_thread), not from the event loop"
    )


def _outcome(read: Callable[[], Any]) -> Any:
    """What ``read`` returns, or the Unreadable it raises (kept, so it is not tried twice)."""
    try:
        return read()
    except Unreadable as exc:
        return exc


def _parse(kind: str, text: str) -> Any:
    if kind == "text":
        return text
    if kind == "json":
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise Unreadable(f"is not valid JSON: {exc}") from None
        if b"\\u0000" in orjson.dumps(value):
            raise Unreadable("holds a NUL character (U+0000), which cannot be stored")
        return value
    try:
        documents = [d for d in load_yaml(text) if d is not None]
    except InvalidYaml as exc:
        raise Unreadable(f"is not valid YAML: {exc.problem}" + _at(exc)) from None
    if len(documents) != 1:
        raise Unreadable(f"expected exactly one YAML document, found {len(documents)}")
    return documents[0]


def _at(exc: InvalidYaml) -> str:
    return f" (line {exc.line}, column {exc.column})" if exc.line is not None else ""


def _placeholder(mapping: dict[Any, Any]) -> tuple[str, Any] | None:
    """(kind, target) when ``mapping`` is a placeholder of ours."""
    if len(mapping) != 1:
        return None
    [(key, target)] = mapping.items()
    if isinstance(key, str) and key.startswith("$") and key[1:] in KINDS:
        return key[1:], target
    return None


def _has_dollar_key(mapping: dict[Any, Any]) -> bool:
    return any(isinstance(key, str) and key.startswith("$") for key in mapping)


def _placeholders_in(value: Any) -> Iterable[tuple[str, Any]]:
    """Every placeholder in ``value``, as the substitution walk finds them."""
    if isinstance(value, list):
        for item in value:
            yield from _placeholders_in(item)
    elif isinstance(value, dict):
        placeholder = _placeholder(value)
        if placeholder is not None:
            yield placeholder
        elif not _has_dollar_key(value):
            for item in value.values():
                yield from _placeholders_in(item)


def _short(target: Any) -> str:
    text = repr(target)
    return text if len(text) <= 200 else f"{text[:197]}..."


def _is_url(target: str) -> bool:
    return urlsplit(target).scheme.lower() in ("http", "https")


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


def _read_file(path: Path, max_bytes: int) -> str:
    try:
        with path.open("rb") as file:
            raw = file.read(max_bytes + 1)
    except FileNotFoundError:
        raise Unreadable("no such file") from None
    except IsADirectoryError:
        raise Unreadable("is a directory") from None
    except OSError as exc:
        raise Unreadable(f"cannot be read: {exc.strerror}") from None
    if len(raw) > max_bytes:
        raise Unreadable(f"is larger than {max_bytes:,} bytes (ATRIUM_CATALOG_FETCH_MAX_BYTES)")
    return _decode(raw)


def _decode(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Unreadable("is not UTF-8 text") from None
    why = unstorable(text)
    if why is not None:
        raise Unreadable(f"{why}, which cannot be stored")
    return text
