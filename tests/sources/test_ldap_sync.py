"""The directory sync against a real OpenLDAP (slapd) started for each test."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme

from sources.db import Database
from sources.errors import DirectoryUnavailable
from sources.ldap.config import PRESETS, DirectoryConfig
from sources.ldap.sync import LOCK_KEY, SyncInProgress, sync_directory
from tests.slapd import (
    AD_SCHEMAS,
    GROUPS_DN,
    ROOT_DN,
    ROOT_PASSWORD,
    USERS_DN,
    Slapd,
    group,
    group_dn,
    person,
    start_slapd,
    user_dn,
)

# engineering ⊃ platform ⊃ sre; ops and oncall contain each other (a cycle).
# Also run through PgBouncer in transaction pooling mode (tests/conftest.py).
pytestmark = pytest.mark.pgbouncer


DIRECTORY = "\n".join(
    [
        person("ada", "Ada Lovelace", mail="ada@example.org"),
        person("grace", "Grace Hopper"),
        person("obrien", "Miles O'Brien", extra="description: odd"),
        person("Zoë Åström", "Zoë Åström"),
        person("anne marie", "Anne Marie"),
        person("!!!", "Nobody At All"),  # no usable characters: skipped
        *(person(f"user{i:02d}", f"User {i}") for i in range(20)),
        group("engineering", [group_dn("platform"), user_dn("ada")]),
        group("platform", [group_dn("sre"), user_dn("grace")]),
        group("sre", [user_dn("obrien"), user_dn("Zoë Åström")]),
        group("ops", [group_dn("oncall"), user_dn("anne marie")]),
        group("oncall", [group_dn("ops"), user_dn("user00")]),
        group("QA Team (EU)", [user_dn(f"user{i:02d}") for i in range(1, 20)]),
    ]
)


@pytest.fixture
def slapd(tmp_path: Path) -> Iterator[Slapd]:
    server = start_slapd(tmp_path / "slapd", DIRECTORY)
    yield server
    server.stop()


def config_for(server: Slapd, **changes: object) -> DirectoryConfig:
    values: dict[str, object] = {
        "url": server.url,
        "users_dn": USERS_DN,
        "groups_dn": GROUPS_DN,
        "attributes": PRESETS["openldap"],
        "bind_dn": ROOT_DN,
        "bind_password": ROOT_PASSWORD,
        "page_size": 7,  # several pages, even for this small directory
    }
    return DirectoryConfig(**{**values, **changes})  # type: ignore[arg-type]


async def refs(db: Database, kind: str) -> list[str]:
    rows = await db.fetch("select ref from entities where kind = $1 order by ref", kind)
    return [r["ref"] for r in rows]


async def test_first_sync_brings_users_groups_and_nesting(db: Database, slapd: Slapd) -> None:
    report = await sync_directory(db, config_for(slapd), brake=0.1)
    assert report.outcome == "succeeded"
    assert (report.users_read, report.groups_read) == (26, 6)
    assert report.added == 25 + 6 and report.changed == report.removed == 0
    users = await refs(db, "User")
    assert {
        "user:default/ada",
        "user:default/obrien",
        "user:default/zoe-astrom",
        "user:default/anne-marie",
    } <= set(users)
    assert len(users) == 25
    assert [s.dn for s in report.skipped] == [user_dn("!!!")]
    assert "no usable characters" in report.skipped[0].reason
    assert "group:default/qa-team-eu" in await refs(db, "Group")

    member_of = await db.fetch(
        "select distinct target_ref from relations"
        " where source_ref = 'user:default/zoe-astrom' and type = 'memberOf'"
    )
    assert [r["target_ref"] for r in member_of] == ["group:default/sre"]
    children = await db.fetch(
        "select target_ref from relations where source_ref = 'group:default/engineering' and type = 'parentOf'"
    )
    assert [r["target_ref"] for r in children] == ["group:default/platform"]
    managed = await db.fetch("select distinct managed_by, origin from entities")
    assert [tuple(r) for r in managed] == [("ldap", "ldap")]
    annotations = await db.fetchval(
        "select annotations from entities where ref = 'user:default/ada'"
    )
    assert annotations["atrium.dev/ldap-dn"] == user_dn("ada").lower()
    assert annotations["atrium.dev/ldap-uid"]  # entryUUID, stable across renames


async def test_cycles_are_reported_not_looped_on(db: Database, slapd: Slapd) -> None:
    report = await sync_directory(db, config_for(slapd), brake=0.1)
    assert len(report.warnings) == 1
    assert "oncall, ops" in report.warnings[0] and "cycle" in report.warnings[0]


async def test_an_unchanged_directory_writes_nothing(db: Database, slapd: Slapd) -> None:
    await sync_directory(db, config_for(slapd), brake=0.1)
    versions = await db.fetch("select ref, xmin::text from entities order by ref")
    relations = await db.fetchval("select count(*) from relations")
    report = await sync_directory(db, config_for(slapd), brake=0.1)
    assert report.outcome == "succeeded"
    assert report.added == report.changed == report.removed == 0
    assert await db.fetch("select ref, xmin::text from entities order by ref") == versions
    assert await db.fetchval("select count(*) from relations") == relations


async def test_changes_in_the_directory_are_applied(db: Database, slapd: Slapd) -> None:
    await sync_directory(db, config_for(slapd), brake=0.5)
    with slapd.connection() as conn:
        conn.modify(user_dn("ada"), {"displayName": [("MODIFY_REPLACE", ["Countess Lovelace"])]})
        conn.modify(group_dn("sre"), {"member": [("MODIFY_ADD", [user_dn("grace")])]})
        conn.delete(user_dn("user19"))
    report = await sync_directory(db, config_for(slapd), brake=0.5)
    # ada; sre gains grace, so platform (above sre) no longer lists her directly, and her
    # memberOf says so; qa-team-eu.
    assert (report.added, report.changed, report.removed) == (0, 5, 1)
    spec = await db.fetchval("select spec from entities where ref = 'user:default/ada'")
    assert spec["profile"]["displayName"] == "Countess Lovelace"
    assert "user:default/user19" not in await refs(db, "User")


async def test_the_brake_holds_when_half_the_users_vanish(db: Database, slapd: Slapd) -> None:
    await sync_directory(db, config_for(slapd), brake=0.1)
    before = await db.fetch("select ref, xmin::text from entities order by ref")
    # A directory that suddenly answers with half its people (a broken replica, a bad ACL).
    with slapd.connection() as conn:
        for i in range(12):
            conn.delete(user_dn(f"user{i:02d}"))
    report = await sync_directory(db, config_for(slapd), brake=0.1)
    assert report.outcome == "braked"
    assert "would delete 12 of 25 users" in (report.error or "")
    assert report.added == report.changed == report.removed == 0
    assert await db.fetch("select ref, xmin::text from entities order by ref") == before

    runs = await db.fetch("select outcome, error from ldap_sync_runs order by id")
    assert [r["outcome"] for r in runs] == ["succeeded", "braked"]

    forced = await sync_directory(db, config_for(slapd), brake=0.1, force=True)
    assert forced.outcome == "succeeded" and forced.removed == 12
    assert len(await refs(db, "User")) == 13


async def test_a_directory_that_stops_answering_fails_the_run_and_deletes_nothing(
    db: Database, slapd: Slapd
) -> None:
    await sync_directory(db, config_for(slapd), brake=1.0)
    slapd.stop()
    with pytest.raises(DirectoryUnavailable):
        await sync_directory(db, config_for(slapd, timeout=2.0), brake=1.0)
    assert len(await refs(db, "User")) == 25
    run = await db.fetchrow("select outcome, error from ldap_sync_runs order by id desc limit 1")
    assert run["outcome"] == "failed" and run["error"]


async def test_a_wrong_password_is_a_clear_failure(db: Database, slapd: Slapd) -> None:
    with pytest.raises(DirectoryUnavailable, match="invalidCredentials"):
        await sync_directory(db, config_for(slapd, bind_password="wrong"), brake=0.1)


async def test_one_replica_syncs_at_a_time(db: Database, database_url: str, slapd: Slapd) -> None:
    other = await Database.connect(database_url, min_size=1, max_size=1)
    try:
        # Another replica, mid-sync, holds the lock.
        async with other.try_lock(LOCK_KEY) as held:
            assert held
            with pytest.raises(SyncInProgress):
                await sync_directory(db, config_for(slapd), brake=0.1)
    finally:
        await other.close()
    assert await db.fetchval("select count(*) from ldap_sync_runs") == 0
    assert (await sync_directory(db, config_for(slapd), brake=0.1)).outcome == "succeeded"


async def test_a_recent_run_makes_the_next_not_due(db: Database, slapd: Slapd) -> None:
    await sync_directory(db, config_for(slapd), brake=0.1)
    skipped = await sync_directory(db, config_for(slapd), brake=0.1, only_if_older_than=3600)
    assert skipped.outcome == "not-due"
    assert await db.fetchval("select count(*) from ldap_sync_runs") == 1


async def test_directory_users_replace_catalog_ones_and_imports_cannot_overwrite(
    db: Database, slapd: Slapd
) -> None:
    from sources.catalog.documents import parse_documents
    from sources.catalog.store import apply_batch

    ada = "apiVersion: backstage.io/v1alpha1\nkind: User\nmetadata: {name: ada}\nspec: {}\n"
    await apply_batch(db, parse_documents(ada, "people.yaml"))
    await sync_directory(db, config_for(slapd), brake=0.1)
    assert (
        await db.fetchval("select managed_by from entities where ref = 'user:default/ada'")
        == "ldap"
    )
    result = await apply_batch(db, parse_documents(ada, "people.yaml"))
    assert "managed by ldap" in result.errors[0].message
    assert result.deleted == []


def ad_user(cn: str, account: str, groups: list[str], guid: uuid.UUID) -> str:
    return (
        "\n".join(
            [
                f"dn: CN={cn},{USERS_DN}",
                "objectClass: user",
                "objectClass: extensibleObject",
                f"cn: {cn}",
                f"sn: {cn.split()[-1]}",
                f"sAMAccountName: {account}",
                f"displayName: {cn}",
                "instanceType: 4",
                "nTSecurityDescriptor:: AAAA",
                "objectCategory: CN=Person,CN=Schema,CN=Configuration,DC=example,DC=org",
                f"objectGUID:: {base64.b64encode(guid.bytes_le).decode()}",
                *(f"memberOf: CN={g},{GROUPS_DN.upper()}" for g in groups),
            ]
        )
        + "\n"
    )


def ad_group(cn: str, members: list[str]) -> str:
    return (
        "\n".join(
            [
                f"dn: CN={cn},{GROUPS_DN}",
                "objectClass: group",
                "objectClass: extensibleObject",
                f"cn: {cn}",
                "groupType: 2",
                "instanceType: 4",
                "nTSecurityDescriptor:: AAAA",
                "objectCategory: CN=Group,CN=Schema,CN=Configuration,DC=example,DC=org",
                *(f"member: {m}" for m in members),
            ]
        )
        + "\n"
    )


async def test_active_directory_preset(db: Database, tmp_path: Path) -> None:
    """AD's attributes (sAMAccountName, objectGUID, memberOf) on Debian's msuser schema, DNs
    written in different cases on each side."""
    guid = uuid.uuid4()
    directory = "\n".join(
        [
            ad_user("Ada Lovelace", "ALovelace", ["Engineers"], guid),
            ad_user("Grace Hopper", "ghopper", [], uuid.uuid4()),
            ad_group("Engineers", []),
            ad_group("Compilers", [f"cn=grace hopper,{USERS_DN.upper()}"]),
            ad_group("All Staff", [f"CN=ENGINEERS,{GROUPS_DN}", f"cn=compilers,{GROUPS_DN}"]),
        ]
    )
    server = start_slapd(tmp_path / "ad", directory, schemas=AD_SCHEMAS)
    try:
        # OpenLDAP has no AD shorthand for objectCategory=person: filter on the class instead.
        config = config_for(server, attributes=PRESETS["active-directory"]).with_attributes(
            user_filter="(objectClass=user)"
        )
        report = await sync_directory(db, config, brake=0.1)
    finally:
        server.stop()
    assert report.outcome == "succeeded" and not report.skipped, report.skipped
    assert await refs(db, "User") == ["user:default/alovelace", "user:default/ghopper"]
    assert await refs(db, "Group") == [
        "group:default/all-staff",
        "group:default/compilers",
        "group:default/engineers",
    ]
    relations = await db.fetch(
        "select distinct source_ref, type, target_ref from relations"
        " where type in ('memberOf', 'childOf') order by 1, 3"
    )
    assert [tuple(r) for r in relations] == [
        ("group:default/compilers", "childOf", "group:default/all-staff"),
        ("group:default/engineers", "childOf", "group:default/all-staff"),
        ("user:default/alovelace", "memberOf", "group:default/engineers"),
        ("user:default/ghopper", "memberOf", "group:default/compilers"),
    ]
    annotations = await db.fetchval(
        "select annotations from entities where ref = 'user:default/alovelace'"
    )
    assert annotations["atrium.dev/ldap-uid"] == str(guid)


async def test_starttls_and_ldaps_verify_the_server(db: Database, tmp_path: Path) -> None:
    ca = trustme.CA()
    server = start_slapd(tmp_path / "tls", person("ada", "Ada Lovelace"), ca=ca)
    try:
        (tmp_path / "ca.pem").write_bytes(ca.cert_pem.bytes())
        trusted = tmp_path / "ca.pem"
        start_tls = await sync_directory(
            db, config_for(server, start_tls=True, ca_file=trusted), brake=1.0
        )
        assert start_tls.outcome == "succeeded" and start_tls.added == 1
        ldaps = await sync_directory(
            db, config_for(server, url=server.tls_url, ca_file=trusted), brake=1.0
        )
        assert ldaps.outcome == "succeeded" and ldaps.users_read == 1

        (tmp_path / "other.pem").write_bytes(trustme.CA().cert_pem.bytes())
        with pytest.raises(DirectoryUnavailable):
            await sync_directory(
                db,
                config_for(server, url=server.tls_url, ca_file=tmp_path / "other.pem"),
                brake=1.0,
            )
    finally:
        server.stop()


async def test_a_group_in_a_cycle_keeps_its_real_parent(db: Database, tmp_path: Path) -> None:
    directory = "\n".join(
        [
            person("ann", "Ann"),
            group("parent", [group_dn("a")]),
            group("a", [group_dn("b"), user_dn("ann")]),
            group("b", [group_dn("a")]),
            group("Sales, EMEA", [user_dn("ann")]).replace("cn=Sales, EMEA,", "cn=Sales\\, EMEA,"),
            group("all", ["cn=Sales\\2C EMEA," + GROUPS_DN]),
        ]
    )
    server = start_slapd(tmp_path / "cycle", directory)
    try:
        # Groups' member values only: users' computed memberOf would hide a lost nesting.
        config = config_for(server).with_attributes(member_of="noSuchAttribute")
        report = await sync_directory(db, config, brake=1.0)
    finally:
        server.stop()
    assert report.outcome == "succeeded", report.error
    children = await db.fetch(
        "select source_ref, target_ref from relations where type = 'parentOf' order by 1, 2"
    )
    assert ("group:default/parent", "group:default/a") in [tuple(r) for r in children]
    # The escaped and the hex-escaped spellings of one DN meet: sales-emea is nested in all.
    assert ("group:default/all", "group:default/sales-emea") in [tuple(r) for r in children]
