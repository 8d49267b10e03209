"""`atrium sync ldap` and `atrium token`, run as an operator runs them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import AppFactory
from tests.slapd import (
    GROUPS_DN,
    ROOT_DN,
    ROOT_PASSWORD,
    USERS_DN,
    Slapd,
    group,
    person,
    start_slapd,
    user_dn,
)
from tests.test_cli import atrium

DIRECTORY = "\n".join(
    [person(f"user{i}", f"User {i}") for i in range(10)]
    + [person("!bad!", "Bad Name").replace("uid: !bad!", "uid: !!!")]
    + [group("team", [user_dn(f"user{i}") for i in range(10)])]
)


@pytest.fixture
def slapd(tmp_path: Path) -> Iterator[Slapd]:
    server = start_slapd(tmp_path / "slapd", DIRECTORY)
    yield server
    server.stop()


def ldap_env(database_url: str, server: Slapd) -> dict[str, str]:
    return {
        "ATRIUM_DATABASE_URL": database_url,
        "ATRIUM_LDAP_URL": server.url,
        "ATRIUM_LDAP_BIND_DN": ROOT_DN,
        "ATRIUM_LDAP_BIND_PASSWORD": ROOT_PASSWORD,
        "ATRIUM_LDAP_USERS_DN": USERS_DN,
        "ATRIUM_LDAP_GROUPS_DN": GROUPS_DN,
        "ATRIUM_LDAP_PAGE_SIZE": "3",
    }


def test_sync_ldap_reports_and_brakes(database_url: str, slapd: Slapd) -> None:
    env = ldap_env(database_url, slapd)
    first = atrium("sync", "ldap", env=env)
    assert first.returncode == 0, first.stderr
    assert (
        "succeeded: added 11, changed 0, removed 0, skipped 1 (11 users and 1 groups read)"
        in first.stdout
    )
    assert f"skipped: uid=!bad!,{USERS_DN}: uid '!!!' has no usable characters" in first.stderr
    again = atrium("sync", "ldap", env=env)
    assert "succeeded: added 0, changed 0, removed 0" in again.stdout

    with slapd.connection() as conn:
        for i in range(5):
            conn.delete(user_dn(f"user{i}"))
    braked = atrium("sync", "ldap", env=env)
    assert braked.returncode == 1
    assert "braked: added 0, changed 0, removed 0" in braked.stdout
    assert "would delete 5 of 10 users" in braked.stderr and "--force" in braked.stderr
    forced = atrium("sync", "ldap", "--force", env=env)
    assert forced.returncode == 0 and "removed 5" in forced.stdout


def test_sync_ldap_without_a_directory_says_what_is_missing(database_url: str) -> None:
    result = atrium("sync", "ldap", env={"ATRIUM_DATABASE_URL": database_url})
    assert result.returncode == 1
    assert "needs ATRIUM_LDAP_URL, ATRIUM_LDAP_USERS_DN, ATRIUM_LDAP_GROUPS_DN" in result.stderr


def test_tokens_are_created_listed_and_revoked(database_url: str) -> None:
    env = {"ATRIUM_DATABASE_URL": database_url}
    created = atrium(
        "token",
        "create",
        "--name",
        "ci",
        "--scope",
        "read",
        "--scope",
        "write",
        "--subject",
        "group:platform",
        env=env,
    )
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("atr_") and len(token) > 40
    token_id = token.split("_")[1]
    listed = atrium("token", "list", env=env)
    assert f"{token_id}  ci  read,write  group:default/platform" in listed.stdout
    assert token.split("_", 2)[2] not in listed.stdout  # the secret is never shown again
    assert atrium("token", "revoke", token_id, env=env).returncode == 0
    assert "revoked" in atrium("token", "list", env=env).stdout
    assert atrium("token", "revoke", token_id, env=env).returncode == 1
    no_subject = atrium("token", "create", "--name", "x", "--scope", "write", env=env)
    assert no_subject.returncode == 2 and "--subject" in no_subject.stderr


async def test_serve_syncs_in_the_background(make_client: AppFactory, slapd: Slapd) -> None:
    client = await make_client(
        ldap_url=slapd.url,
        ldap_bind_dn=ROOT_DN,
        ldap_bind_password=ROOT_PASSWORD,
        ldap_users_dn=USERS_DN,
        ldap_groups_dn=GROUPS_DN,
    )
    for _ in range(200):
        runs = await client.gql("{ ldapSyncRuns { outcome added } }")
        if runs["data"]["ldapSyncRuns"] and runs["data"]["ldapSyncRuns"][0]["outcome"] != "running":
            break
        await asyncio.sleep(0.05)
    assert runs["data"]["ldapSyncRuns"] == [{"outcome": "succeeded", "added": 11}]
