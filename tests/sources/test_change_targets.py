"""Where change events may go (the SSRF check), and how hook secrets are kept."""

from __future__ import annotations

from ipaddress import ip_network

import pytest

from sources.changes.secrets import SecretBox
from sources.changes.targets import check_url, resolve_target
from sources.errors import ChangeHookError

LOOPBACK = [ip_network("127.0.0.0/8")]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/events",
        "http://localhost/events",  # a name is judged by what it resolves to
        "http://10.1.2.3/",
        "http://192.168.0.10/",
        "http://100.64.0.1/",  # shared address space
        "http://169.254.169.254/latest/meta-data/",  # cloud metadata
        "http://0.0.0.0/",
        "http://[::1]/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://[::ffff:127.0.0.1]/",  # IPv4-mapped
        "http://[2002:7f00:1::]/",  # 6to4 around 127.0.0.1
        "http://[64:ff9b::a00:1]/",  # NAT64 around 10.0.0.1
        "http://224.0.0.1/",
    ],
)
async def test_addresses_inside_the_network_are_refused(url: str) -> None:
    with pytest.raises(ChangeHookError, match="ATRIUM_CHANGE_HOOKS_ALLOWED_NETWORKS"):
        await resolve_target(url, [], 5.0)


async def test_allowed_networks_let_a_receiver_inside_through() -> None:
    target = await resolve_target("http://127.0.0.1:8080/events?x=1", LOOPBACK, 5.0)
    assert (target.host, target.port, str(target.address)) == ("127.0.0.1", 8080, "127.0.0.1")
    # Mapped IPv4 is judged as the address it carries.
    await resolve_target("http://[::ffff:127.0.0.1]/", LOOPBACK, 5.0)
    with pytest.raises(ChangeHookError):
        await resolve_target("http://10.0.0.1/", LOOPBACK, 5.0)


async def test_a_public_address_passes_and_is_the_one_connected_to() -> None:
    target = await resolve_target("https://93.184.216.34/hooks/atrium?a=b", [], 5.0)
    assert (str(target.address), target.port) == ("93.184.216.34", 443)
    assert target.request_url == "https://93.184.216.34/hooks/atrium?a=b"
    v6 = await resolve_target("http://[2606:4700::1]:8080/x", [], 5.0)
    assert (str(v6.address), v6.port) == ("2606:4700::1", 8080)
    assert v6.request_url == "http://[2606:4700::1]:8080/x"
    # As requests spell it: the host in ASCII, the rest percent-encoded.
    named = await resolve_target("http://[2606:4700::1]/b\u00fccher?q=a b", [], 5.0)
    assert named.request_url == "http://[2606:4700::1]/b%C3%BCcher?q=a%20b"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://example.com/x", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("http:///x", "names no host"),
        ("https://user:password@example.com/x", "credentials in the URL"),
        ("http://example.com:99999/", "url:"),
        ("http://example.com/" + "x" * 3000, "longer than"),
    ],
)
def test_urls_that_are_not_receivers_are_refused(url: str, why: str) -> None:
    with pytest.raises(ChangeHookError, match=why):
        check_url(url)


async def test_a_name_that_does_not_resolve_is_refused() -> None:
    with pytest.raises(ChangeHookError, match="does not resolve"):
        await resolve_target("http://no-such-host.invalid/", [], 5.0)


def test_a_sealed_secret_shows_nothing_and_opens_only_for_its_url_and_key() -> None:
    box = SecretBox("a key of at least sixteen characters")
    secret = "receiver-secret-0123456789"
    stored, sealed = box.seal(secret, "https://a.example/hook")
    assert sealed and secret.encode() not in stored
    assert box.open(stored, sealed, "https://a.example/hook") == secret
    # Two seals of one secret differ (a fresh nonce each): equal secrets are not visible.
    assert box.seal(secret, "https://a.example/hook")[0] != stored
    with pytest.raises(ChangeHookError, match="does not open"):
        box.open(stored, sealed, "https://b.example/hook")  # copied onto another hook
    with pytest.raises(ChangeHookError, match="does not open"):
        SecretBox("another key, just as long as it").open(stored, sealed, "https://a.example/hook")
    with pytest.raises(ChangeHookError, match="not set"):
        SecretBox(None).open(stored, sealed, "https://a.example/hook")


def test_without_a_key_a_secret_is_kept_as_given() -> None:
    box = SecretBox(None)
    stored, sealed = box.seal("receiver-secret-0123456789", "http://x/")
    assert not sealed and not box.sealing
    assert box.open(stored, sealed, "http://x/") == "receiver-secret-0123456789"
