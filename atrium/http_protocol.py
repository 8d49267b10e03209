"""uvicorn's HTTP protocol (httptools), sending the hot answers itself.

``http_protocol`` is the HTTP protocol every Atrium server gives uvicorn
(``atrium.cli.uvicorn_options``): for a connection to an app that keeps hot answers
(``graph.hot_answers``) it makes an ``AtriumHttpProtocol``, for anything else uvicorn's own
``HttpToolsProtocol``.

``AtriumHttpProtocol`` looks at each request once its headers are in. When the table has the
answer to it, the answer is written there and then, framed as uvicorn frames a response (its
status line, then its own Date and Server headers), and counted: no ASGI scope, no task, no
messages. It does so only where uvicorn would have written the same bytes straight away:

- an HTTP/1.1 request that keeps the connection open (one asking to close it, and HTTP/1.0,
  go to uvicorn, which closes after answering);
- nothing earlier on the connection is still being answered or waiting to be (pipelined
  requests keep their order: once one goes to uvicorn, those after it wait behind it);
- the transport takes writes (when its buffer is full uvicorn's path waits for it to drain,
  and reading stops behind the request);
- the replica is not draining (its answers then say ``Connection: close``) and no
  concurrency limit is set.

Every other request goes on to uvicorn unchanged, carrying its key in the scope
(``graph.hot_answers.HOT_KEY``) when it has one, so that the view can fill the table.

This leans on ``HttpToolsProtocol``'s internals as uvicorn 0.54 has them (its parser
callbacks, and ``url``, ``headers``, ``scope``, ``cycle``, ``pipeline``, ``flow``,
``server_state``, ``limit_concurrency``, the keep-alive timer): pyproject pins uvicorn to the
releases this was tested with, and tests/atrium/test_hot_http.py checks the bytes against
uvicorn's own.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from graph.hot_answers import HOT_KEY, HotAnswer, HotAnswers
from graph.services import Services

__all__ = ["AtriumHttpProtocol", "http_protocol"]


def http_protocol(
    config: Config,
    server_state: ServerState,
    app_state: dict[str, Any],
    _loop: asyncio.AbstractEventLoop | None = None,
) -> asyncio.Protocol:
    """A connection's protocol (uvicorn calls this as it would a protocol class)."""
    if not config.loaded:
        config.load()
    services = _services(config.loaded_app)
    if services is None or services.hot is None:
        return HttpToolsProtocol(config, server_state, app_state, _loop)
    return AtriumHttpProtocol(config, server_state, app_state, _loop, services=services)


def _services(app: Any) -> Services | None:
    """The Services of an Atrium app, under whatever middleware uvicorn wrapped it in."""
    for _ in range(8):
        services = getattr(app, "services", None)
        if isinstance(services, Services):
            return services
        app = getattr(app, "app", None)
        if app is None:
            break
    return None


class AtriumHttpProtocol(HttpToolsProtocol):
    """uvicorn's protocol, answering from the hot answers where it can (see the module)."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        services: Services,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        assert services.hot is not None
        self.services = services
        self.hot: HotAnswers = services.hot
        self.answered = False  # the request being parsed was answered from the table

    def on_message_begin(self) -> None:
        # uvicorn's, but the ASGI scope waits until a request goes to uvicorn (below).
        self.url = b""
        self.expect_100_continue = False
        self.headers = []

    def _begin_scope(self) -> None:
        """The scope uvicorn's on_message_begin makes, made now: it resets what the parser's
        callbacks gathered since, which is kept."""
        url, headers, expect = self.url, self.headers, self.expect_100_continue
        super().on_message_begin()
        self.url, self.headers, self.expect_100_continue = url, headers, expect
        self.scope["headers"] = headers

    def on_headers_complete(self) -> None:
        parser = self.parser
        key = self.hot.key(self.url, self.headers) if parser.get_method() == b"GET" else None
        if key is not None:
            cycle = self.cycle
            if (
                (cycle is None or cycle.response_complete)
                and not self.pipeline
                and not self.flow.write_paused
                and not self.services.draining
                and self.limit_concurrency is None
                and parser.should_keep_alive()
                and parser.get_http_version() == "1.1"
                and not self.transport.is_closing()
                and self.hot.answer(key, self._frame, self.transport.write)
            ):
                self.answered = True
                return
            self._begin_scope()
            # An extension of the scope: uvicorn's type for it names the standard keys only.
            self.scope[HOT_KEY] = key  # type: ignore[typeddict-unknown-key]
        else:
            self._begin_scope()
        if self.timeout_keep_alive_task is not None:
            # Armed after an answer from the table earlier in the same data: uvicorn arms it
            # only once nothing is being answered.
            self._unset_keepalive_if_required()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        if not self.answered:
            super().on_message_complete()
            return
        # As uvicorn ends a response on a connection kept open with nothing queued.
        self.answered = False
        self.server_state.total_requests += 1
        self._unset_keepalive_if_required()
        self.timeout_keep_alive_task = self.loop.call_later(
            self.timeout_keep_alive, self.timeout_keep_alive_handler
        )

    def _frame(self, answer: HotAnswer) -> bytes:
        """The whole response, as uvicorn writes one: its status line and default headers
        (Date changes each second: a new list then), the answer's headers, its body."""
        defaults = self.server_state.default_headers
        if answer.framed_with is not defaults:
            answer.framed = b"".join(
                [
                    STATUS_LINE[200],
                    *(b"%s: %s\r\n" % (name.lower(), value) for name, value in defaults),
                    answer.head,
                    b"\r\n",
                    answer.body,
                ]
            )
            answer.framed_with = defaults
        return answer.framed
