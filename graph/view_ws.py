"""``/graphql`` over websockets: subscriptions (the graphql-transport-ws protocol) with the same
context, viewer and documents as HTTP (``graph.view``): a persisted hash runs what it names, and
in production only trusted documents run. A client too slow for what it is sent is closed with
1013 (``graph.ws_outbox``)."""

from __future__ import annotations

from typing import Any

from graph.auth.viewer import ANONYMOUS_READ_OFF, may_read
from graph.context import Context
from graph.http_input import HTTPError
from graph.persisted import PersistedQueryMiss
from graph.services import Services
from graph.ws_outbox import Outbox
from sources.errors import DatabaseUnavailable

__all__ = ["subscriptions"]


def subscriptions(services: Services) -> Any:
    """Subscriptions over websockets (the graphql-transport-ws protocol), with the same context
    and viewer as HTTP requests, and the same documents: a persisted hash runs what it names,
    and in production only trusted documents run. A client too slow for what it is sent is
    closed with 1013 (``graph.ws_outbox``)."""
    from graphql import GraphQLSyntaxError, parse
    from strawberry.asgi import GraphQL
    from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
    from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
        BaseGraphQLTransportWSHandler,
    )
    from strawberry.subscriptions.protocols.graphql_transport_ws.types import ErrorMessage

    class PersistedSubscriptions(Outbox, BaseGraphQLTransportWSHandler[Context, None]):
        outbox_limit = services.settings.subscription_queue

        async def handle_subscribe(self, message: Any) -> None:
            payload = message.get("payload") or {}
            if self.connection_acknowledged and message.get("id") not in self.operations:
                if not may_read(self.context.viewer):
                    await self._refuse(
                        message,
                        {"message": ANONYMOUS_READ_OFF, "extensions": {"code": "UNAUTHENTICATED"}},
                    )
                    return
                try:
                    document = await services.persisted.document(
                        services.database, payload.get("query"), payload.get("extensions")
                    )
                except PersistedQueryMiss as miss:
                    await self._refuse(message, miss.error)
                    return
                except HTTPError as exc:
                    await self._refuse(
                        message, {"message": exc.message, "extensions": {"code": exc.code}}
                    )
                    return
                except DatabaseUnavailable as exc:
                    await self._refuse(
                        message, {"message": str(exc), "extensions": {"code": "UNAVAILABLE"}}
                    )
                    return
                if document.text:
                    # Strawberry's parser cache raises a syntax error out of the operation's
                    # task (the client would see the operation complete, and no error).
                    try:
                        parse(document.text)
                    except GraphQLSyntaxError as exc:
                        await self._refuse(
                            message,
                            {**exc.formatted, "extensions": {"code": "GRAPHQL_PARSE_FAILED"}},
                        )
                        return
                message = {**message, "payload": {**payload, "query": document.text}}
            await super().handle_subscribe(message)

        async def _refuse(self, message: Any, error: Any) -> None:
            refusal: ErrorMessage = {"id": message["id"], "type": "error", "payload": [error]}
            await self.send_message(refusal)

    class SubscriptionView(GraphQL):
        # Strawberry types the handler's context as None too.
        graphql_transport_ws_handler_class = PersistedSubscriptions  # type: ignore[assignment]

        # Strawberry types the context as None by default; ours is the Context dataclass.
        async def get_context(self, request: Any, response: Any = None) -> Context:  # type: ignore[override]
            return await services.context(request)

    assert services.assembly.schema is not None
    return SubscriptionView(
        services.assembly.schema,
        subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
        graphql_ide=None,
    )
