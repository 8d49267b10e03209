"""What catalog imports may fetch, and where a file on a forge is read from (fetching itself is
exercised through placeholders, in test_placeholders)."""

from __future__ import annotations

from sources.catalog.fetch import FetchPolicy, raw_url


def test_pages_of_files_are_read_as_the_files() -> None:
    assert (
        raw_url("https://github.com/APIs-guru/openapi-directory/blob/dab6854/APIs/x/openapi.yaml")
        == "https://raw.githubusercontent.com/APIs-guru/openapi-directory/dab6854/APIs/x/openapi.yaml"
    )
    assert (
        raw_url("https://gitlab.example/group/repo/-/blob/main/api.yaml?ref_type=heads")
        == "https://gitlab.example/group/repo/-/raw/main/api.yaml?ref_type=heads"
    )
    plain = "https://raw.githubusercontent.com/o/r/main/a.yaml"
    assert raw_url(plain) == plain and raw_url("https://github.com/o/r") == "https://github.com/o/r"


def test_hosts_match_exactly_or_by_subdomain() -> None:
    policy = FetchPolicy(hosts=frozenset({"git.example.com", "*.cdn.example"}))
    assert policy.allows("git.example.com") and policy.allows("GIT.example.com.")
    assert policy.allows("a.cdn.example") and policy.allows("a.b.cdn.example")
    assert not policy.allows("cdn.example") and not policy.allows("evilcdn.example")
    assert not policy.allows("example.com") and not FetchPolicy().allows("git.example.com")
