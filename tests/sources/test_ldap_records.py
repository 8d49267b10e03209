from __future__ import annotations

import uuid

import pytest

from sources.catalog.refs import check_name
from sources.ldap.config import PRESETS
from sources.ldap.reader import RawEntry
from sources.ldap.records import normalise_dn, normalise_name, parse_groups, parse_users
from sources.ldap.sync import group_cycles

OPENLDAP = PRESETS["openldap"]
AD = PRESETS["active-directory"]


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("ada", "ada"),
        ("O'Brien", "obrien"),
        ("O\u2019Brien", "obrien"),
        ("Zoë Åström", "zoe-astrom"),
        ("  Anne   Marie ", "anne-marie"),
        ("QA Team (EU)", "qa-team-eu"),
        ("first.last", "first.last"),
        ("a__b--c..d", "a_b-c.d"),
        ("-leading-and-trailing-", "leading-and-trailing"),
        ("!!!", ""),
        ("日本語", ""),
    ],
)
def test_names_normalise_deterministically(raw: str, name: str) -> None:
    assert normalise_name(raw) == name
    assert normalise_name(raw) == normalise_name(raw)
    if name:
        assert check_name(name) is None


def test_long_names_keep_apart() -> None:
    a, b = normalise_name("x" * 70 + "a"), normalise_name("x" * 70 + "b")
    assert a != b and len(a) == len(b) == 63
    assert check_name(a) is None


def test_dns_compare_without_case_or_spaces() -> None:
    assert (
        normalise_dn("CN=Ada Lovelace, OU=People,DC=Example")
        == "cn=ada lovelace,ou=people,dc=example"
    )
    assert normalise_dn("cn=a\\,b,dc=x") == "cn=a\\,b,dc=x"


def entry(dn: str, **attributes: list[bytes]) -> RawEntry:
    return RawEntry(dn, dict(attributes))


def test_misfits_are_skipped_with_their_dn_and_reason() -> None:
    users, skipped = parse_users(
        [
            entry("uid=ok,ou=p", uid=[b"ok"], mail=[b"ok@example.org"]),
            entry("uid=junk,ou=p", uid=[b"\xff\xfe\x00junk"]),
            entry("uid=none,ou=p", cn=[b"No Uid"]),
            entry("uid=bang,ou=p", uid=["💥💥".encode()]),
            entry("uid=OK2,ou=p", uid=[b"OK"]),  # the same name once normalised
            entry("uid=badmail,ou=p", uid=[b"mailer"], mail=[b"\xff"]),
        ],
        OPENLDAP,
    )
    # Sorted by DN, the first keeps a contested name.
    assert [u.name for u in users] == ["mailer", "ok"]
    assert users[1].dn == "uid=ok,ou=p"
    assert users[0].email is None  # an undecodable optional value is dropped, not fatal
    reasons = {s.dn: s.reason for s in skipped}
    assert reasons == {
        "uid=junk,ou=p": "uid is not valid UTF-8",
        "uid=none,ou=p": "has no uid",
        "uid=bang,ou=p": "uid '💥💥' has no usable characters",
        "uid=OK2,ou=p": "its name ok is already taken by uid=ok,ou=p",
    }


def test_active_directory_attributes() -> None:
    guid = uuid.uuid4()
    [user], _ = parse_users(
        [
            entry(
                "CN=Ada Lovelace,OU=People,DC=corp",
                sAMAccountName=[b"ALovelace"],
                objectGUID=[guid.bytes_le],
                memberOf=[b"CN=Engineers,OU=Groups,DC=corp"],
            )
        ],
        AD,
    )
    assert user.name == "alovelace"
    assert user.uid == str(guid)
    assert user.member_of == {"cn=engineers,ou=groups,dc=corp"}
    [group], _ = parse_groups(
        [
            entry(
                "CN=Engineers,OU=Groups,DC=corp",
                cn=[b"Engineers"],
                member=[b"cn=ada lovelace,ou=people,dc=corp"],
            )
        ],
        AD,
    )
    assert group.members == {"cn=ada lovelace,ou=people,dc=corp"}


def test_cycles_are_found_however_long() -> None:
    chain = {f"g{i}": {f"g{i + 1}"} for i in range(500)} | {"g500": {"g0"}}
    [cycle] = group_cycles(chain)
    assert "g0, g1, g10" in cycle
    assert group_cycles({"a": {"b"}, "b": set()}) == []


def test_escaped_dns_have_one_spelling() -> None:
    assert normalise_dn("cn=Sales\\, EMEA,ou=groups") == normalise_dn(
        "CN=Sales\\2C EMEA, OU=Groups"
    )
    assert normalise_dn("cn=Zo\\C3\\AB,ou=p") == normalise_dn("cn=Zoë,ou=p")
    assert normalise_dn("cn=a\\+b,ou=p") != normalise_dn("cn=a,ou=p")
