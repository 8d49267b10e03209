"""The hostile values Atrium's own suite sends to every argument, as plain values: what
breaks servers (NUL, lone surrogates, a hundred thousand characters, SQL and LIKE
metacharacters, path climbing, odd Unicode, broken and hostile YAML, forged cursors and global
IDs, boundary integers) and what breaks the URLs, headers and paths a value is put into
unchecked (control characters, ``/``, ``.`` and ``..``, ``%`` escapes, ``?`` and ``#``, a UUID
naming nothing, long climbing values). ``check_hostile_inputs`` gives them to a plugin's fields;
Atrium's generated operations (tests/hostile_values.py) mix them with hypothesis's own text."""

from __future__ import annotations

import base64
from typing import Any

import orjson

__all__ = ["HOSTILE_IDS", "HOSTILE_INTS", "HOSTILE_STRINGS", "HOSTILE_URL_PARTS", "HOSTILE_YAML"]

CHECKOUT_MANIFEST = """\
apiVersion: compute.atrium.dev/v1
kind: PinApp
metadata:
  name: checkout
  namespace: shop
  annotations: {atrium.dev/entity-ref: component:default/checkout}
spec: {image: registry.example/checkout:2.0, replicas: 3}
"""
SEARCH_MANIFEST = CHECKOUT_MANIFEST.replace("checkout", "search")
CATALOG_DOCUMENT = """\
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: hostile-probe, description: "made by a generated operation"}
spec: {type: service, lifecycle: experimental, owner: checkout-team}
"""
LAUGHS = "a: &a [1,2,3,4,5,6,7,8,9]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)


def b64(value: Any) -> str:
    raw = value if isinstance(value, bytes) else orjson.dumps(value)
    return base64.urlsafe_b64encode(raw).decode()


HOSTILE_STRINGS = [
    "\x00",
    "component:default/check\x00out",
    "\ud800",
    "check\udfffout",
    "",
    " ",
    "%",
    "_",
    "\\",
    "%_\\%",
    "'; drop table entities; --",
    '" or 1=1 --',
    "a:* & !b | (c <-> d)",
    "../../../../etc/passwd",
    "component:../../x",
    "${jndi:ldap://127.0.0.1/a}",
    "{{7*7}}",
    "<script>alert(1)</script>",
    "\r\nX-Injected: 1",
    "\u202eevil",
    "\ufeff",
    "\U0001f600" * 50,
    "\U0001d518\U0001d52b\U0001d526",  # letters outside the Basic Multilingual Plane
    "a" * 100_000,
    "component:default/" + "a" * 300,
    "atr_x_y",
]
# YAML that does not parse, or stands for what no JSON (nor PostgreSQL) can hold.
HOSTILE_YAML = [
    "a: [b",
    "[" * 5_000,
    "&a [*a]",
    LAUGHS,
    'a: "\\0"',
    'a: "\\ud800"',
    "a: 123456789012345678901234567890",
    "a: " + "9" * 5_000,
    "a: !!binary aGVsbG8=",
    "a: !!int abc",
    "? [a]\n: b",
    "a: b\n\x07",
    "!!python/object/apply:os.system [id]",
    CHECKOUT_MANIFEST.replace("ref: component:default/checkout", 'ref: "check\\0out"'),
    CHECKOUT_MANIFEST.replace("replicas: 3", "replicas: 3, env: {a: 1}"),
    CHECKOUT_MANIFEST.replace("  annotations: {", "  labels: {a: [1]}\n  annotations: {"),
    CATALOG_DOCUMENT.replace("experimental", "{x: .nan}"),
]
# Cursors and global IDs this API never issued.
HOSTILE_IDS = [
    "Y3Vyc29y",  # base64 of "cursor"
    b64(["a\x00", "b"]),
    b64(b'["a","\\ud800"]'),
    b64([1, 2]),
    b64(["title", None, "component:default/checkout"]),  # titles are never missing
    b64(["owner", "a\x00", "b"]),
    b64(["nope", "a", "b"]),
    b64(2**63),
    b64(-1),
    b64(b"\xff\xfe\x00"),
    base64.b64encode(b"Query:x").decode(),
    base64.b64encode(b"Nope:x").decode(),
    base64.b64encode(b":").decode(),
    base64.b64encode(b"Component:component:default/a\x00b").decode(),
]
# What a value put into a URL's path or query, or a header, unchecked breaks: httpx refuses
# control characters in a URL (an exception, not an HTTP error; a bare LF splits a header);
# `/`, `.` and `..` make another path (clients resolve dot segments), `?` and `#` a query or a
# fragment, `%` escapes of them what a server decodes; the fullwidth ../ is ../ once
# NFKC-normalised. An id of the right form names nothing; a long value is longer than servers
# take in a request line. (NUL, CR LF and 100,000 characters are among the strings above.)
NIL_UUID = "00000000-0000-0000-0000-000000000000"
HOSTILE_URL_PARTS = [
    "Ä\x18K",
    "a\nb",
    ".",
    "..",
    "a/b",
    "%2e%2e%2f",
    "%00",
    "a?b=1&c",
    "a#b",
    "\uff0e\uff0e\uff0f",
    NIL_UUID,
    f"{NIL_UUID}/..",
    "..%2f" * 2_000,
]
HOSTILE_STRINGS += HOSTILE_URL_PARTS + HOSTILE_YAML + HOSTILE_IDS
HOSTILE_INTS = [-(2**31), -1, 0, 1, 2, 20, 99, 100, 101, 500, 501, 1000, 1001, 10_001, 2**31 - 1]
