"""A synthetic company directory as LDIF: people, nested teams, and a few records that misfit.

The LDAP scenario needs a directory shaped like a real one, because that is what makes a sync
slow or wrong: uids such as ``miles.o'brien``, ``zoë.åström`` or ``anne marie.van der berg``
that must be normalised, groups nested five levels deep, people listed in a team and again in
its department (a membership the sync must recognise as implied), and a handful of records it
must skip rather than fail on. Alongside the LDIF the plan says what a correct sync stores
(entities, direct memberships, nestings, skipped DNs), so the benchmark can check it measured
the real work and not an early exit.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass
from typing import Final

from bench.words import FIRST_NAMES, codenames
from sources.ldap.records import normalise_name

__all__ = ["GROUPS_DN", "SUFFIX", "USERS_DN", "DirectoryPlan", "plan_directory"]

SUFFIX: Final = "dc=example,dc=org"
USERS_DN: Final = f"ou=people,{SUFFIX}"
GROUPS_DN: Final = f"ou=groups,{SUFFIX}"

# Share of the groups on each level of the tree, from the divisions down; the deepest level
# takes the rest. 2,000 groups: 5 divisions, 25 departments, 125 areas, 625 teams, 1,218 squads.
_LEVELS: Final = (0.0025, 0.0125, 0.0625, 0.3125)
_LEVEL_NAMES: Final = ("Division", "Department", "Area", "Team", "Squad")
_ODD_FIRST: Final = ("zoë", "josé", "françois", "søren", "björn", "chloé", "anne marie", "jean luc")
_ODD_LAST: Final = (
    "o'brien",
    "d'angelo",
    "o\u2019neill",  # a typographic apostrophe
    "müller",
    "åström",
    "núñez",
    "van der berg",
    "de la cruz",
)
# Group names with characters a name cannot hold; one needs an escaped comma in its DN.
_ODD_GROUPS: Final = ("QA Team (EU)", "R&D Zürich", "Sales, EMEA", "Ops \u2013 On-call")
# RFC 4514: characters escaped anywhere in a DN value (leading # and spaces are not generated).
_DN_SPECIAL: Final = frozenset(',+"\\<>;=')


@dataclass(frozen=True, slots=True)
class DirectoryPlan:
    """The LDIF, and what a correct sync makes of it."""

    ldif: str
    users: int  # entries that become User entities
    groups: int  # entries that become Group entities
    entries: int  # everything under the two bases, misfits included
    memberships: int  # direct user-in-group memberships, implied ones left out
    nestings: int  # group-in-group edges
    depth: int
    skipped_users: tuple[str, ...]  # DNs the sync must set aside
    skipped_groups: tuple[str, ...]
    cycles: int  # nesting cycles it must warn about

    @property
    def skipped(self) -> tuple[str, ...]:
        return self.skipped_users + self.skipped_groups

    @property
    def relations(self) -> int:
        """Relation rows: each nesting is stored in both directions, and each membership in
        both directions by both of its ends (the group's members and the user's memberOf,
        as Backstage keeps them)."""
        return 4 * self.memberships + 2 * self.nestings


def _escape(value: str) -> str:
    return "".join(f"\\{c}" if c in _DN_SPECIAL else c for c in value)


def _line(attribute: str, value: str) -> str:
    """One LDIF line; values that are not plain ASCII travel base64-encoded (RFC 2849)."""
    if value.isascii() and value.isprintable() and not value.startswith((" ", ":", "<")):
        return f"{attribute}: {value}"
    return f"{attribute}:: {base64.b64encode(value.encode()).decode()}"


def _entry(dn: str, object_class: str, attributes: list[tuple[str, str]]) -> str:
    lines = [_line("dn", dn), f"objectClass: {object_class}"]
    lines += [_line(attribute, value) for attribute, value in attributes]
    return "\n".join(lines) + "\n"


def _title(name: str) -> str:
    """``o'brien`` → ``O'Brien``, ``van der berg`` → ``Van Der Berg``: good enough for a cn."""
    return " ".join(
        "'".join(part[:1].upper() + part[1:] for part in word.split("'"))
        for word in name.split(" ")
    )


class _Builder:
    def __init__(self, users: int, groups: int, seed: int) -> None:
        if users < 100 or groups < 20:
            raise ValueError("the LDAP scenario needs at least 100 users and 20 groups")
        self.rng = random.Random(seed)
        self.entries: list[str] = []
        self.names: set[str] = set()  # normalised names taken, as the sync will see them
        words = codenames(self.rng, groups + max(500, users // 8))
        self.group_words, self.surnames = words[:groups], words[groups:]
        self.members: list[list[str]] = []  # per group: member DNs
        self.parents: list[int | None] = []  # per group: its parent in the tree
        self.group_cns: list[str] = []
        self.group_dns: list[str] = []

    def unique(self, wanted: str) -> str:
        """``wanted``, or ``wanted2``, ``wanted3``...: unique once normalised."""
        candidate, n = wanted, 1
        while normalise_name(candidate) in self.names:
            n += 1
            candidate = f"{wanted}{n}"
        self.names.add(normalise_name(candidate))
        return candidate

    def plan_groups(self, count: int) -> tuple[list[list[int]], list[int]]:
        """The tree: levels of groups, each below a parent on the level above. Two more
        groups contain each other (a cycle) beside it. Returns the levels and the cycle."""
        tree = count - 2
        sizes = [max(1, round(tree * share)) for share in _LEVELS]
        sizes.append(tree - sum(sizes))
        names = iter(self.group_words)
        odd = list(_ODD_GROUPS)
        levels: list[list[int]] = []
        for depth, size in enumerate(sizes):
            level = []
            above = levels[-1] if levels else []
            # Round-robin over a shuffled level above: every group gets at least one child.
            parents = [above[i % len(above)] for i in range(size)] if above else []
            self.rng.shuffle(parents)
            for i in range(size):
                use_odd = depth >= 2 and bool(odd) and i % 97 == 5
                cn = odd.pop() if use_odd else f"{next(names).title()} {_LEVEL_NAMES[depth]}"
                level.append(self.add_group(self.unique(cn), parents[i] if parents else None))
            levels.append(level)
        cycle = [self.add_group(self.unique(f"On-call {w}"), None) for w in ("Primary", "Backup")]
        self.members[cycle[0]].append(self.group_dns[cycle[1]])
        self.members[cycle[1]].append(self.group_dns[cycle[0]])
        return levels, cycle

    def add_group(self, cn: str, parent: int | None) -> int:
        index = len(self.group_dns)
        self.group_cns.append(cn)
        self.group_dns.append(f"cn={_escape(cn)},{GROUPS_DN}")
        self.members.append([])
        self.parents.append(parent)
        if parent is not None:
            self.members[parent].append(self.group_dns[index])
        return index

    def ancestors(self, group: int) -> set[int]:
        found: set[int] = set()
        parent = self.parents[group]
        while parent is not None:
            found.add(parent)
            parent = self.parents[parent]
        return found

    def person(self, uid: str, display: str, last: str) -> str:
        dn = f"uid={_escape(uid)},{USERS_DN}"
        mail = f"{normalise_name(uid) or 'nobody'}@example.org"
        attributes = [("uid", uid), ("cn", display), ("sn", last), ("displayName", display)]
        self.entries.append(_entry(dn, "inetOrgPerson", [*attributes, ("mail", mail)]))
        return dn

    def name(self) -> tuple[str, str]:
        rng = self.rng
        first = rng.choice(_ODD_FIRST) if rng.random() < 0.04 else rng.choice(FIRST_NAMES)
        last = rng.choice(_ODD_LAST) if rng.random() < 0.04 else rng.choice(self.surnames)
        return first, last


def plan_directory(users: int, groups: int, seed: int = 7) -> DirectoryPlan:
    """``users`` people in ``groups`` groups nested five levels deep, plus four misfits."""
    b = _Builder(users, groups, seed)
    rng = b.rng
    levels, cycle = b.plan_groups(groups)
    squads, teams = levels[-1], levels[-2]
    anywhere = [g for level in levels for g in level] + cycle

    memberships = 0
    uids: list[str] = []
    for _ in range(users):
        first, last = b.name()
        uids.append(b.unique(f"{first}.{last}"))
        dn = b.person(uids[-1], _title(f"{first} {last}"), _title(last))
        # One home team (mostly a squad), sometimes one or two more groups anywhere; a group
        # above the home team is listed too, as directories do, but is not a direct membership.
        home = rng.choice(squads if rng.random() < 0.75 else teams)
        chosen = {home} | set(rng.sample(anywhere, rng.choice((0, 0, 0, 1, 1, 2))))
        if chosen & set(cycle):
            # Either group of the cycle holds the other: someone in one is in both, and the
            # sync cannot tell which was direct when the directory expands nesting.
            chosen |= set(cycle)
        for g in chosen:
            b.members[g].append(dn)
        above = {a for g in chosen for a in b.ancestors(g)}
        memberships += len(chosen - above)

    # Misfits: no usable characters, an accented twin of a uid already taken, no uid at all,
    # and a group whose name has nothing usable. They are members somewhere, as in real life.
    twin = uids[0].replace("a", "á", 1) if "a" in uids[0] else uids[0] + "é"
    skipped = [
        b.person("!!!", "Nobody At All", "Nobody"),
        b.person(twin, _title(twin.replace(".", " ")), "Twin"),
    ]
    service = f"cn=Printer Service,{USERS_DN}"
    b.entries.append(_entry(service, "inetOrgPerson", [("cn", "Printer Service"), ("sn", "Svc")]))
    skipped.append(service)
    b.members[squads[0]] += skipped
    odd_group = f"cn=???,{GROUPS_DN}"

    for cn, dn, members in zip(b.group_cns, b.group_dns, b.members, strict=True):
        values = [("cn", cn), *(("member", m) for m in sorted(members))]
        b.entries.append(_entry(dn, "groupOfNames", values))
    b.entries.append(_entry(odd_group, "groupOfNames", [("cn", "???"), ("member", skipped[0])]))

    return DirectoryPlan(
        ldif="\n".join(b.entries),
        users=users,
        groups=groups,
        entries=len(b.entries),
        memberships=memberships,
        nestings=sum(p is not None for p in b.parents) + len(cycle),
        depth=len(levels),
        skipped_users=tuple(skipped),
        skipped_groups=(odd_group,),
        cycles=1,
    )
