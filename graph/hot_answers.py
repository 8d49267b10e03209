"""The hottest kept answers, ready to write: for the HTTP protocol (``atrium.http_protocol``)
to answer a repeated GET before any ASGI machinery runs.

A console asks the same few pages over and over, and the response cache answers them with no
SQL and no execution; what such a hit still costs is mostly what is done around it (an ASGI
scope, a task, two messages, every header checked again on the way out). This table holds the
very bytes the view sent for such a hit, so that the server can send them again itself, as
long as they are exactly what the view would send.

Which requests (``key``): a GET of ``/graphql?...`` carrying, of the headers the view reads,
only Accept, Content-Type and the CSRF preflight headers, each at most once. A request
that says who is asking (Authorization, Cookie, the user header), asks to revalidate
(If-None-Match and the other conditional headers), has a body or expects something goes the
normal way. The key is the target as sent, Accept, Content-Type, and whether a preflight header
is there: everything the view's answer to an anonymous viewer depends on.

Which answers (``fill``): the view fills an entry when it has just sent a kept answer that any
anonymous viewer is given (``Cache-Control: public``) to a request that has a key, with the
headers it sent. An entry lives while those bytes stay right:

- while its response-cache entry lives: the cache tells of every key its L1 lets go of (an
  invalidation by tags, here or from another replica through Redis, eviction, expiry);
- while its ``Age`` is the same whole number of seconds: an entry dies when the Age would
  change, and the next request, answered the normal way, fills it again;
- never while the replica drains (every answer then says ``Connection: close``): the protocol
  leaves every request to the view then.

Every request answered from the table is counted as the view counts one (the metrics by
operation, the access log line, a response-cache hit), in batches: ``flush`` runs a tenth of a
second after the first hit waiting, before ``/metrics`` is read and before any other request is
logged, so the log keeps its order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Final

from graph.logs import FLUSH_DELAY
from loaders import responses as kept

__all__ = ["HOT_KEY", "Hit", "HotAnswer", "HotAnswers", "HotKey"]

# The target as sent, Accept, Content-Type, and whether a CSRF preflight header is there.
HotKey = tuple[bytes, bytes | None, bytes | None, bool]

TARGET_PREFIX: Final = b"/graphql?"
# Where in an ASGI scope the protocol leaves a request's key for the view, which fills the
# table when its answer is one to keep here.
HOT_KEY: Final = "atrium.hot_key"

# What each header the view reads is to the key: a bit of its own (each may come once), or
# _REFUSE: a request carrying it is answered the normal way.
_REFUSE: Final = 0
_ACCEPT: Final = 1
_CONTENT_TYPE: Final = 2
_PREFLIGHTS: Final = {
    b"apollo-require-preflight": 4,
    b"x-apollo-operation-name": 8,
    b"graphql-require-preflight": 16,
}
_REFUSED: Final = (
    # Who is asking (the user header is added per app).
    b"authorization",
    b"cookie",
    # Revalidation and other conditions on the answer.
    b"if-none-match",
    b"if-modified-since",
    b"if-match",
    b"if-unmodified-since",
    b"if-range",
    b"range",
    # A body, or an exchange other than one request and its answer.
    b"content-length",
    b"transfer-encoding",
    b"expect",
    b"upgrade",
)


@dataclass(slots=True, eq=False)
class HotAnswer:
    """One answer as the view sent it, and what it was kept under."""

    response_key: str  # its entry in the response cache
    label: str | None  # the operation, for the metrics and the access log
    head: bytes  # the answer's header lines, each ending in CRLF
    body: bytes
    valid_until: float  # wall clock: its Age changes then
    # The whole response as the server frames it (status line, its own headers), and what it
    # was framed with: the server's to fill and to check (atrium.http_protocol).
    framed: bytes = b""
    framed_with: object = None
    size: int = field(init=False)

    def __post_init__(self) -> None:
        self.size = len(self.head) + len(self.body) * 2 + 200


# A request answered from the table: the answer, when (wall clock) and how long it took.
Hit = tuple[HotAnswer, float, float]


class HotAnswers:
    """Answers by HotKey, bounded by entries and bytes (the oldest filled go first)."""

    def __init__(
        self, user_header: str, *, max_entries: int = 256, max_bytes: int = 16 * 2**20
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0
        # Told of the requests answered from the table, in batches (set by create_app).
        self.record: Callable[[list[Hit]], None] | None = None
        self.answered = 0  # requests answered from the table since start
        self.hits: list[Hit] = []  # answered, not yet counted
        self._timer: asyncio.TimerHandle | None = None
        self._entries: dict[HotKey, HotAnswer] = {}
        self._by_response: dict[Hashable, set[HotKey]] = {}
        self._roles: dict[bytes, int] = {
            b"accept": _ACCEPT,
            b"content-type": _CONTENT_TYPE,
            **_PREFLIGHTS,
            **dict.fromkeys(_REFUSED, _REFUSE),
            user_header.lower().encode("latin-1"): _REFUSE,
        }

    def __len__(self) -> int:
        return len(self._entries)

    def key(self, target: bytes, headers: Iterable[tuple[bytes, bytes]]) -> HotKey | None:
        """The key of a GET of ``target`` with these headers (names in lower case); None when
        the request must be answered the normal way."""
        if not target.startswith(TARGET_PREFIX):
            return None
        roles = self._roles
        seen = 0
        accept: bytes | None = None
        content_type: bytes | None = None
        preflight = False
        for name, value in headers:
            role = roles.get(name)
            if role is None:
                continue
            if role == _REFUSE or seen & role:
                return None
            seen |= role
            if role == _ACCEPT:
                accept = value
            elif role == _CONTENT_TYPE:
                content_type = value
            elif value:
                preflight = True
        return (target, accept, content_type, preflight)

    def find(self, key: HotKey) -> HotAnswer | None:
        """The entry for ``key``, whether its Age is still right or not."""
        return self._entries.get(key)

    def answer(
        self, key: HotKey, frame: Callable[[HotAnswer], bytes], write: Callable[[bytes], None]
    ) -> bool:
        """Write the answer for ``key`` as ``frame`` makes it a response, if the table has
        it; False when it has not (the request is then the view's)."""
        answer = self._entries.get(key)
        if answer is None:
            return False
        if kept.clock() >= answer.valid_until:
            self._drop(key)
            return False
        started = time.time()
        write(frame(answer))
        if not self.hits:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_DELAY, self.flush)
        self.hits.append((answer, started, time.time() - started))
        self.answered += 1
        return True

    def flush(self) -> None:
        """Hand the requests answered since the last flush to ``record``."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        hits, self.hits = self.hits, []
        if hits and self.record is not None:
            self.record(hits)

    # Filling and emptying

    def fill(
        self,
        key: HotKey,
        response_key: str,
        stored_at: float,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        label: str | None,
    ) -> None:
        """Keep what the view just sent for ``key``: a kept public answer (stored at
        ``stored_at``) under ``response_key``, with these headers, which it holds now."""
        age = 0
        for name, value in headers:
            if name == b"age":
                age = int(value)
        valid_until = stored_at + age + 1
        if kept.clock() >= valid_until:  # the Age has moved on already
            return
        head = b"".join(b"%s: %s\r\n" % (name.lower(), value) for name, value in headers)
        answer = HotAnswer(response_key, label, head, body, valid_until)
        if answer.size > self.max_bytes:
            return
        self._drop(key)
        self._entries[key] = answer
        self._by_response.setdefault(response_key, set()).add(key)
        self.bytes += answer.size
        while len(self._entries) > self.max_entries or self.bytes > self.max_bytes:
            self._drop(next(iter(self._entries)))

    def forget(self, response_key: Hashable) -> None:
        """The response cache let go of ``response_key``: so do its answers here."""
        for key in self._by_response.pop(response_key, ()):
            answer = self._entries.pop(key, None)
            if answer is not None:
                self.bytes -= answer.size

    def clear(self) -> None:
        self._entries.clear()
        self._by_response.clear()
        self.bytes = 0

    def _drop(self, key: HotKey) -> None:
        answer = self._entries.pop(key, None)
        if answer is None:
            return
        self.bytes -= answer.size
        keys = self._by_response.get(answer.response_key)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_response[answer.response_key]
