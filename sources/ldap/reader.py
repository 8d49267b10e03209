"""Reading users and groups with paged searches, each search on its own connection.

ldap3 has no asyncio; its thread-safe synchronous strategy runs in worker threads (which
import it, the first time a directory is read: a process that reads none never pays for it).
Errors on any page raise (``raise_exceptions``): a search that stopped half-way must never look
complete, because the sync would then delete everyone it did not see.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sources.errors import DirectoryUnavailable
from sources.ldap.config import DirectoryConfig

if TYPE_CHECKING:
    import ldap3

__all__ = ["RawEntry", "read_directory"]


@dataclass(frozen=True, slots=True)
class RawEntry:
    """One directory record: its DN and attribute values exactly as the server sent them."""

    dn: str
    attributes: dict[str, list[bytes]]


Progress = Callable[[str, int], None]


def _connect(config: DirectoryConfig) -> ldap3.Connection:
    import ldap3

    tls = None
    if config.url.lower().startswith("ldaps://") or config.start_tls:
        tls = ldap3.Tls(
            validate=ssl.CERT_REQUIRED,
            ca_certs_file=str(config.ca_file) if config.ca_file else None,
        )
    server = ldap3.Server(config.url, tls=tls, connect_timeout=config.timeout, get_info=ldap3.NONE)
    conn = ldap3.Connection(
        server,
        user=config.bind_dn,
        password=config.bind_password,
        client_strategy=ldap3.SAFE_SYNC,
        auto_bind=ldap3.AUTO_BIND_NONE,
        raise_exceptions=True,
        receive_timeout=max(1, round(config.timeout)),  # ldap3 packs it as an integer
        read_only=True,
    )
    try:
        conn.open()
        if config.start_tls:
            conn.start_tls()
        conn.bind()
    except BaseException:
        conn.unbind()
        # ldap3 keeps the socket of a failed connect attempt open on the connection.
        if conn.socket is not None:
            conn.socket.close()
        raise
    return conn


def _search(
    config: DirectoryConfig,
    base: str,
    search_filter: str,
    attributes: list[str],
    what: str,
    progress: Progress | None,
) -> list[RawEntry]:
    """Every entry under ``base`` that ``search_filter`` matches, a page at a time; raises
    DirectoryUnavailable on any error."""
    import ldap3
    from ldap3.core.exceptions import LDAPException

    try:
        conn = _connect(config)
        try:
            found: list[RawEntry] = []
            for item in conn.extend.standard.paged_search(
                search_base=base,
                search_filter=search_filter,
                search_scope=ldap3.SUBTREE,
                attributes=attributes,
                paged_size=config.page_size,
                generator=True,
            ):
                if item.get("type") != "searchResEntry":
                    continue
                raw = {k: list(v) for k, v in item["raw_attributes"].items()}
                found.append(RawEntry(item["dn"], raw))
                if progress is not None and len(found) % config.page_size == 0:
                    progress(what, len(found))
            if progress is not None:
                progress(what, len(found))
            return found
        finally:
            conn.unbind()
    except (LDAPException, OSError) as exc:
        raise DirectoryUnavailable(f"reading {config.url} failed: {exc}") from exc


async def read_directory(
    config: DirectoryConfig, progress: Progress | None = None
) -> tuple[list[RawEntry], list[RawEntry]]:
    """All users and all groups, read concurrently; raises DirectoryUnavailable on any error
    (``_search``)."""
    a = config.attributes
    # An empty name leaves an attribute out: reading users' memberOf is costly where the
    # server computes it (OpenLDAP's dynlist), and redundant when groups list their members.
    user_attributes = [n for n in (a.user_name, a.display_name, a.email, a.member_of, a.uid) if n]
    wanted = (a.group_name, a.display_name, a.email, a.description, a.member, a.member_of, a.uid)
    group_attributes = [n for n in wanted if n]
    return await asyncio.gather(
        asyncio.to_thread(
            _search, config, config.users_dn, a.user_filter, user_attributes, "users", progress
        ),
        asyncio.to_thread(
            _search, config, config.groups_dn, a.group_filter, group_attributes, "groups", progress
        ),
    )
