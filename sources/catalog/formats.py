"""The formats of an entity's fields, as Backstage's FieldFormatEntityPolicy checks them.

Kubernetes' formats, which Backstage took: a namespace is a DNS label (lowercase), label and
annotation keys are an optional DNS-subdomain prefix and a name (``backstage.io/techdocs-ref``),
label values are names or empty; tags are lowercase words joined by dashes; a link's URL is
absolute, as a browser's URL parser (WHATWG's, the one Node's ``new URL`` is) reads it. The
messages are Backstage's: ``"metadata.namespace" is not valid; expected ... but found "Foo"``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

import ada_url

from sources.catalog.schema import js_keys
from sources.errors import EntityValidationError

__all__ = ["check_formats", "is_dns_label", "is_object_name"]

_DNS_LABEL: Final = re.compile(r"[a-z0-9]+(?:-+[a-z0-9]+)*")
_OBJECT_NAME: Final = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_VERSION: Final = re.compile(r"[a-z0-9A-Z]+")
_KIND: Final = re.compile(r"[a-zA-Z][a-z0-9A-Z]*")
_TAG: Final = re.compile(r"[a-z0-9:+#]+(?:-[a-z0-9:+#]+)*")
# What JavaScript's String.prototype.trim removes (Python's str.strip differs at the edges).
_JS_SPACE: Final = re.compile(
    "^[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]*$"
)

_NAME_LIKE: Final = (
    "a string that is sequences of [a-zA-Z0-9] separated by any of [-_.], at most 63 "
    "characters in total"
)
_PREFIXED: Final = "a valid prefix and/or suffix"
_DNS: Final = (
    "a string that is sequences of [a-z0-9] separated by [-], at most 63 characters in total"
)
_TAGGED: Final = (
    "a string that is sequences of [a-z0-9:+#] separated by [-], at most 63 characters in total"
)
_KINDED: Final = (
    "a string that is a sequence of [a-zA-Z][a-z0-9A-Z], at most 63 characters in total"
)


def is_dns_label(value: object) -> bool:
    return isinstance(value, str) and 1 <= len(value) <= 63 and bool(_DNS_LABEL.fullmatch(value))


def is_object_name(value: object) -> bool:
    return isinstance(value, str) and 1 <= len(value) <= 63 and bool(_OBJECT_NAME.fullmatch(value))


def _dns_subdomain(value: str) -> bool:
    return 1 <= len(value) <= 253 and all(is_dns_label(part) for part in value.split("."))


def _prefixed(value: object, suffix: Callable[[str], bool]) -> bool:
    if not isinstance(value, str):
        return False
    parts = value.split("/")
    if len(parts) == 1:
        return suffix(parts[0])
    return len(parts) == 2 and _dns_subdomain(parts[0]) and suffix(parts[1])


def _api_version(value: object) -> bool:
    return _prefixed(value, lambda n: 1 <= len(n) <= 63 and bool(_VERSION.fullmatch(n)))


def _kind(value: object) -> bool:
    return isinstance(value, str) and 1 <= len(value) <= 63 and bool(_KIND.fullmatch(value))


def _key(value: object) -> bool:
    return _prefixed(value, is_object_name)


def _label_value(value: object) -> bool:
    return value == "" or is_object_name(value)


def _tag(value: object) -> bool:
    return isinstance(value, str) and 1 <= len(value) <= 63 and bool(_TAG.fullmatch(value))


def _url(value: object) -> bool:
    return isinstance(value, str) and bool(ada_url.check_url(value))


def _text(value: object) -> bool:
    return isinstance(value, str) and not _JS_SPACE.match(value)


def _js_text(value: object) -> str:
    """``value`` as JavaScript's template strings write it, for the messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "[object Object]"
    if isinstance(value, list):
        return ",".join("" if v is None else _js_text(v) for v in value)
    return "null" if value is None else str(value)


def check_formats(doc: dict[str, Any], skip: Callable[[str], bool]) -> None:
    """FieldFormatEntityPolicy's checks, in its order; ``skip`` names fields whose placeholder
    could not be read (left empty, not held against the document)."""

    def require(where: str, value: Any, valid: Callable[[Any], bool], expected: str) -> None:
        if skip(where):
            return
        if value is None:
            raise EntityValidationError(where, "must have a value")
        if not valid(value):
            raise EntityValidationError(
                where, f'is not valid; expected {expected} but found "{_js_text(value)}"'
            )

    metadata = doc["metadata"]
    require("apiVersion", doc["apiVersion"], _api_version, _PREFIXED)
    require("kind", doc["kind"], _kind, _KINDED)
    require("metadata.name", metadata["name"], is_object_name, _NAME_LIKE)
    if "namespace" in metadata:
        require("metadata.namespace", metadata["namespace"], is_dns_label, _DNS)
    for field, value_ok, expected in (
        ("labels", _label_value, _NAME_LIKE),
        ("annotations", lambda v: isinstance(v, str), "a string"),
    ):
        values = metadata.get(field) or {}
        for key in js_keys(values):
            value = values[key]
            where = f"metadata.{field}.{key}"
            require(where, key, _key, _PREFIXED)
            require(where, value, value_ok, expected)
    for index, tag in enumerate(metadata.get("tags") or []):
        require(f"metadata.tags[{index}]", tag, _tag, _TAGGED)
    for index, link in enumerate(metadata.get("links") or []):
        where = f"metadata.links[{index}]"
        if not isinstance(link, dict):
            continue  # its placeholder could not be read
        require(f"{where}.url", link.get("url"), _url, "a string that is a valid url")
        for key in ("title", "icon"):
            if key in link:
                require(f"{where}.{key}", link[key], _text, "a non empty string")
