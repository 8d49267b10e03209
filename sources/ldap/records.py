"""Directory records to users and groups: names normalised, misfits set aside with a reason."""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

from sources.catalog.refs import NAME_MAX, check_name
from sources.ldap.config import AttributeMap
from sources.ldap.reader import RawEntry

__all__ = [
    "DirectoryGroup",
    "DirectoryUser",
    "Skipped",
    "normalise_dn",
    "normalise_name",
    "parse_groups",
    "parse_users",
]

_INVALID: Final = re.compile(r"[^a-z0-9_.-]+")
# O'Brien is obrien, not o-brien; typographic apostrophes too.
_DROPPED: Final = re.compile("['`\"\u2019\u02bc]")
_EDGES: Final = re.compile(r"^[^a-z0-9]+|[^a-z0-9]+$")
_REPEATS: Final = re.compile(r"([-_.])[-_.]+")


@dataclass(frozen=True, slots=True)
class Skipped:
    dn: str
    reason: str


@dataclass(slots=True)
class DirectoryUser:
    dn: str  # normalised for comparison
    name: str
    display_name: str | None
    email: str | None
    uid: str | None
    member_of: set[str] = field(default_factory=set)


@dataclass(slots=True)
class DirectoryGroup:
    dn: str
    name: str
    display_name: str | None
    email: str | None
    description: str | None
    uid: str | None
    members: set[str] = field(default_factory=set)
    member_of: set[str] = field(default_factory=set)


def normalise_name(raw: str) -> str:
    """A valid entity name for any directory name, the same every time.

    Accents are folded (``Zoë`` → ``zoe``), apostrophes dropped, every other run of characters
    a name cannot hold becomes one dash; an over-long name is cut and given a short hash of the
    whole so that two long names sharing a prefix stay apart. Empty when nothing usable is left.
    """
    folded = unicodedata.normalize("NFKD", raw)
    ascii_only = "".join(c for c in folded if not unicodedata.combining(c))
    text = _DROPPED.sub("", ascii_only.lower())
    text = _INVALID.sub("-", text)
    text = _REPEATS.sub(r"\1", text)
    text = _EDGES.sub("", text)
    if len(text) > NAME_MAX:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        text = _EDGES.sub("", text[: NAME_MAX - 9]) + "-" + digest
    return text


@lru_cache(maxsize=65536)
def normalise_dn(dn: str, case_insensitive: bool = True) -> str:
    """One spelling per DN: no spaces around separators, escapes written one way
    (``cn=Sales\\, EMEA`` and ``cn=Sales\\2C EMEA`` are the same group), usually no case."""
    rdns = []
    for rdn in _split(dn, ","):
        parts = []
        for pair in _split(rdn, "+"):
            attribute, _, value = pair.partition("=")
            parts.append(f"{attribute.strip()}={_escape(_unescape(value.strip()))}")
        rdns.append("+".join(parts))
    joined = ",".join(rdns)
    return joined.lower() if case_insensitive else joined


def _split(text: str, separator: str) -> list[str]:
    """Split on separators that are not escaped."""
    parts, current, escaped = [], [], False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            current.append(char)
            escaped = True
        elif char == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _unescape(value: str) -> str:
    """RFC 4514 escapes, ``\\,`` and ``\\2C`` alike, back to the characters (hex as UTF-8)."""
    out = bytearray()
    i = 0
    while i < len(value):
        char = value[i]
        if char == "\\" and i + 1 < len(value):
            pair = value[i + 1 : i + 3]
            if len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair):
                out.append(int(pair, 16))
                i += 3
                continue
            out += value[i + 1].encode()
            i += 2
            continue
        out += char.encode()
        i += 1
    return out.decode("utf-8", errors="replace")


def _escape(value: str) -> str:
    escaped = "".join(f"\\{c}" if c in ',+"\\<>;=' else c for c in value)
    if escaped.startswith(("#", " ")):
        escaped = "\\" + escaped
    if escaped.endswith(" ") and not escaped.endswith("\\ "):
        escaped = escaped[:-1] + "\\ "
    return escaped


def _text(entry: RawEntry, attribute: str) -> str | None:
    """The first value of an attribute as text; raises UnicodeDecodeError for binary junk."""
    values = _values(entry, attribute)
    if not values:
        return None
    text = values[0].decode("utf-8").strip()
    return text or None


def _values(entry: RawEntry, attribute: str) -> list[bytes]:
    wanted = attribute.lower()
    for key, values in entry.attributes.items():
        if key.lower() == wanted:
            return values
    return []


def _uid(entry: RawEntry, attributes: AttributeMap) -> str | None:
    values = _values(entry, attributes.uid)
    if not values:
        return None
    if attributes.uid_is_binary and len(values[0]) == 16:
        return str(uuid.UUID(bytes_le=values[0]))
    return values[0].decode("utf-8", errors="replace")


def _dns(entry: RawEntry, attribute: str, case_insensitive: bool) -> set[str]:
    found = set()
    for value in _values(entry, attribute):
        try:
            found.add(normalise_dn(value.decode("utf-8"), case_insensitive))
        except UnicodeDecodeError:
            continue
    return found


def _name(entry: RawEntry, attribute: str) -> tuple[str | None, str | None]:
    """(normalised name, None) or (None, why the record cannot be used)."""
    try:
        raw = _text(entry, attribute)
    except UnicodeDecodeError:
        return None, f"{attribute} is not valid UTF-8"
    if raw is None:
        return None, f"has no {attribute}"
    name = normalise_name(raw)
    problem = check_name(name) if name else f"{attribute} {raw[:60]!r} has no usable characters"
    return (None, problem) if problem else (name, None)


def _optional_text(entry: RawEntry, attribute: str) -> str | None:
    try:
        return _text(entry, attribute)
    except UnicodeDecodeError:
        return None


def _named(
    entries: list[RawEntry], attribute: str, case_insensitive: bool
) -> tuple[list[tuple[RawEntry, str]], list[Skipped]]:
    """Entries with a usable, unique name, in DN order (the first keeps a contested name)."""
    named: list[tuple[RawEntry, str]] = []
    skipped: list[Skipped] = []
    taken: dict[str, str] = {}
    for entry in sorted(entries, key=lambda e: normalise_dn(e.dn, case_insensitive)):
        name, problem = _name(entry, attribute)
        if name is None:
            skipped.append(Skipped(entry.dn, problem or "unusable"))
        elif name in taken:
            skipped.append(Skipped(entry.dn, f"its name {name} is already taken by {taken[name]}"))
        else:
            taken[name] = entry.dn
            named.append((entry, name))
    return named, skipped


def parse_users(
    entries: list[RawEntry], attributes: AttributeMap
) -> tuple[list[DirectoryUser], list[Skipped]]:
    ci = attributes.dn_case_insensitive
    named, skipped = _named(entries, attributes.user_name, ci)
    users = [
        DirectoryUser(
            dn=normalise_dn(entry.dn, ci),
            name=name,
            display_name=_optional_text(entry, attributes.display_name),
            email=_optional_text(entry, attributes.email),
            uid=_uid(entry, attributes),
            member_of=_dns(entry, attributes.member_of, ci),
        )
        for entry, name in named
    ]
    return users, skipped


def parse_groups(
    entries: list[RawEntry], attributes: AttributeMap
) -> tuple[list[DirectoryGroup], list[Skipped]]:
    ci = attributes.dn_case_insensitive
    named, skipped = _named(entries, attributes.group_name, ci)
    groups = [
        DirectoryGroup(
            dn=normalise_dn(entry.dn, ci),
            name=name,
            display_name=_optional_text(entry, attributes.display_name),
            email=_optional_text(entry, attributes.email),
            description=_optional_text(entry, attributes.description),
            uid=_uid(entry, attributes),
            members=_dns(entry, attributes.member, ci),
            member_of=_dns(entry, attributes.member_of, ci),
        )
        for entry, name in named
    ]
    return groups, skipped
