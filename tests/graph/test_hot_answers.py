"""The table of hot answers on its own: which requests have a key, and when an entry goes.
(tests/atrium/test_hot_http.py serves them over sockets.)"""

from __future__ import annotations

import pytest

from graph.hot_answers import HotAnswers, HotKey
from loaders import responses

TARGET = b"/graphql?operationName=Page&extensions=%7B%7D"
BASE = [(b"host", b"console"), (b"apollo-require-preflight", b"true"), (b"accept", b"*/*")]


@pytest.fixture
def table() -> HotAnswers:
    return HotAnswers("X-Forwarded-User", max_entries=3, max_bytes=10_000)


def key_of(table: HotAnswers, target: bytes, headers: list[tuple[bytes, bytes]]) -> HotKey:
    key = table.key(target, headers)
    assert key is not None
    return key


def fill(table: HotAnswers, key: HotKey, response_key: str, body: bytes = b"{}") -> None:
    headers = [(b"cache-control", b"max-age=60, public"), (b"content-length", b"2")]
    table.fill(key, response_key, responses.clock(), headers, body, "Page")


def test_the_key_is_the_target_and_what_the_view_reads(table: HotAnswers) -> None:
    key = table.key(TARGET, BASE)
    assert key == (TARGET, b"*/*", None, True)
    assert table.key(TARGET, [*BASE, (b"user-agent", b"curl"), (b"x-forwarded-for", b"1.2.3.4")])
    assert table.key(TARGET, [(b"accept", b"*/*")]) == (TARGET, b"*/*", None, False)
    assert table.key(TARGET, [*BASE[:2], (b"content-type", b"text/plain")]) == (
        TARGET,
        None,
        b"text/plain",
        True,
    )
    # An empty preflight header is none (CSRF prevention reads it so).
    assert table.key(TARGET, [(b"x-apollo-operation-name", b"")]) == (TARGET, None, None, False)


@pytest.mark.parametrize(
    "header",
    [
        (b"authorization", b"Bearer atr_x"),
        (b"cookie", b"atrium_demo_user=ada"),
        (b"x-forwarded-user", b"ada"),
        (b"if-none-match", b'"etag"'),
        (b"if-modified-since", b"Thu, 01 Jan 2026 00:00:00 GMT"),
        (b"content-length", b"0"),
        (b"transfer-encoding", b"chunked"),
        (b"expect", b"100-continue"),
        (b"upgrade", b"websocket"),
        (b"accept", b"application/json"),  # twice: which one the view reads is its business
        (b"apollo-require-preflight", b""),
    ],
)
def test_requests_that_say_more_have_no_key(table: HotAnswers, header: tuple[bytes, bytes]) -> None:
    assert table.key(TARGET, [*BASE, header]) is None


def test_other_targets_have_no_key(table: HotAnswers) -> None:
    for target in (b"/graphql", b"/graphqlx?a=1", b"http://console/graphql?a=1", b"/healthz"):
        assert table.key(target, BASE) is None


def test_an_entry_goes_with_its_response_cache_entry(table: HotAnswers) -> None:
    first, second = key_of(table, TARGET, BASE), key_of(table, TARGET, BASE[:2])
    fill(table, first, "public|page")
    fill(table, second, "public|page")
    fill(table, key_of(table, TARGET + b"&v=2", BASE), "public|other")
    assert len(table) == 3
    table.forget("public|page")
    assert len(table) == 1 and table.find(first) is None and table.find(second) is None


def test_the_table_is_bounded(table: HotAnswers) -> None:
    keys = [key_of(table, TARGET + b"&v=%d" % i, BASE) for i in range(5)]
    for i, key in enumerate(keys):
        fill(table, key, f"public|{i}")
    assert len(table) == 3 and table.find(keys[0]) is None and table.find(keys[4])
    fill(table, keys[0], "public|big", b"x" * 20_000)  # larger than the whole table
    assert table.find(keys[0]) is None
    table.forget("public|4")
    table.forget("public|3")
    table.forget("public|2")
    assert len(table) == 0 and table.bytes == 0


def test_an_answer_whose_age_moved_on_is_not_kept(table: HotAnswers) -> None:
    key = key_of(table, TARGET, BASE)
    headers = [(b"cache-control", b"max-age=60, public"), (b"age", b"3")]
    table.fill(key, "public|page", responses.clock() - 4.5, headers, b"{}", "Page")
    assert len(table) == 0
    table.fill(key, "public|page", responses.clock() - 3.5, headers, b"{}", "Page")
    assert len(table) == 1
