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
a symlink lead out), within a size limit, and URLs as ``sources.catalog.fetch`` reads them (the
hosts a ``FetchPolicy`` allows, a timeout, a size limit, several at once). Each file or URL is
read and parsed once per import. Reading is blocking I/O: async code runs it in a thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

from sources.catalog.fetch import Fetcher, FetchPolicy, Unreadable, decode
from sources.yaml_json import InvalidYaml, Yaml12Loader, load_yaml

# FetchPolicy is part of this module's interface (Placeholders takes one).
__all__ = ["FetchPolicy", "Placeholders", "Substituted"]

KINDS: Final = ("text", "json", "yaml")


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
        self._fetcher = Fetcher(self.policy)
        # Paths resolved (symlinks followed), by (directory, target) and by root: resolving
        # costs system calls, and a big tree names the same few files from many documents.
        self._paths: dict[tuple[Path, str], Path] = {}
        self._roots: dict[Path, Path] = {}

    def close(self) -> None:
        self._fetcher.close()

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
        for url, text in self._fetcher.fetch_all(fetchable).items():
            self._texts[f"url {url}"] = text

    def substitute(self, document: Any, base: Path | None, root: Path | None) -> Substituted:
        """``document`` with its placeholders replaced. ``base`` is the catalog file that holds
        it and ``root`` the tree being imported (None for text sent through the API: then only
        URLs can be read)."""
        found = Substituted(document)
        # Most documents have none: taken as they are, not copied (documents are read-only).
        if next(iter(_placeholders_in(document)), None) is not None:
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
                read = lambda: self._fetcher.fetch(where)  # noqa: E731
            else:
                read = lambda: _read_file(Path(where), self.policy.max_bytes)  # noqa: E731
            self._texts[key] = _outcome(read)
        text = self._texts[key]
        if isinstance(text, Unreadable):
            raise Unreadable(str(text))
        return text


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
        documents = [d for d in load_yaml(text, Yaml12Loader) if d is not None]
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
    return decode(raw)
