"""How to reach the directory and how its records map to users and groups.

Two presets cover the usual directories; every attribute and filter can be overridden.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

__all__ = ["PRESETS", "AttributeMap", "DirectoryConfig"]


@dataclass(frozen=True, slots=True)
class AttributeMap:
    user_filter: str
    group_filter: str
    user_name: str  # becomes the User entity's name
    group_name: str
    display_name: str
    email: str
    description: str
    member: str  # on groups: the DNs of members, users and groups alike
    member_of: str  # on users and groups: the DNs of the groups they are in
    # A stable identifier that survives renames, kept as an annotation.
    uid: str
    uid_is_binary: bool
    # Active Directory compares DNs case-insensitively; so does OpenLDAP for the usual schemas.
    dn_case_insensitive: bool = True


PRESETS: Final = {
    "openldap": AttributeMap(
        user_filter="(objectClass=inetOrgPerson)",
        group_filter="(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames))",
        user_name="uid",
        group_name="cn",
        display_name="displayName",
        email="mail",
        description="description",
        member="member",
        member_of="memberOf",
        uid="entryUUID",
        uid_is_binary=False,
    ),
    "active-directory": AttributeMap(
        user_filter="(&(objectCategory=person)(objectClass=user))",
        group_filter="(objectClass=group)",
        user_name="sAMAccountName",
        group_name="cn",
        display_name="displayName",
        email="mail",
        description="description",
        member="member",
        member_of="memberOf",
        uid="objectGUID",
        uid_is_binary=True,
    ),
}


@dataclass(frozen=True, slots=True)
class DirectoryConfig:
    url: str
    users_dn: str
    groups_dn: str
    attributes: AttributeMap
    bind_dn: str | None = None
    bind_password: str | None = None
    start_tls: bool = False
    ca_file: Path | None = None
    timeout: float = 30.0
    page_size: int = 500
    group_type: str = "team"

    def with_attributes(self, **overrides: str | None) -> DirectoryConfig:
        """Override preset attributes; None leaves the preset's value."""
        changes: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
        return replace(self, attributes=replace(self.attributes, **changes))
