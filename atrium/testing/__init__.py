"""Atrium's test kit, for Atrium's own tests and for plugin packages: installed with Atrium,
its pytest plugin (``atrium.testing.pytest_plugin``, registered by a ``pytest11`` entry point)
gives any project these fixtures without a conftest.py:

- ``atrium_database_url``: a fresh database per test (from ``ATRIUM_TEST_DATABASE_URL``,
  else PostgreSQL on 127.0.0.1:5432, else an embedded PostgreSQL), with Atrium's migrations;
- ``atrium_redis_url``: ``ATRIUM_TEST_REDIS_URL``, else 127.0.0.1:6379, else a redis-server;
- ``atrium_app``: ``client = await atrium_app(plugins=[...], **settings)``, an app with those
  plugins (default: ``--atrium-plugin``/the ``atrium_plugins`` ini option, else every
  installed one) and their migrations, on the test's database: an ``AtriumClient``;
- ``atrium_browser``: Chromium, to read a served page before and after the console starts.

And ``LoopThread``, an event loop on a thread of its own for the servers a test runs that
another process talks to (an emulated backend behind ``atrium_serve``, a webhook receiver): the
test's own loop stands still between tests and while a test blocks, theirs does not.

And checks any plugin's fields can be held to:

- ``check_hostile_inputs(client, plugin_id)``: every argument of every field the plugin adds
  (its subscriptions' over a websocket), given the hostile values Atrium's own suite uses,
  answers or fails cleanly, never with a server error;
- ``check_plan_equivalence(client, queries)``: each query answers the same on its compiled
  plan as on the generic executor, and ran on a plan;
- ``check_authorization(client, callers, cases)``: the authorization matrix, every mutation
  the plugin adds called by ten callers (``authz_callers``), each refusal and admission as its
  case declares, state unchanged by refusals (``atrium.testing.authz``).

``AtriumClient.websocket()`` opens a graphql-transport-ws connection to the app in process
(``GraphQLWebSocket``), for tests of subscriptions.

Names are imported when first used, so importing the kit imports nothing heavy.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from atrium.testing.authz import AuthorizationFailures, authz_callers, check_authorization
    from atrium.testing.browser import AtriumBrowser, ConsolePage, Snapshot
    from atrium.testing.client import (
        AppStack,
        AtriumClient,
        CatalogErrors,
        GraphQLErrors,
        PlanRuns,
        Statements,
    )
    from atrium.testing.hostile import HostileInputFailures, check_hostile_inputs
    from atrium.testing.hostile_values import HOSTILE_INTS, HOSTILE_STRINGS
    from atrium.testing.loops import LoopThread
    from atrium.testing.operations import plugin_fields, plugin_queries
    from atrium.testing.plans import PlanDifferences, check_plan_equivalence
    from atrium.testing.plugins import installed_plugin_ids, select_plugins
    from atrium.testing.serve import Served, atrium_serve
    from atrium.testing.websocket import GraphQLWebSocket, WebSocketClosed

__all__ = [
    "HOSTILE_INTS",
    "HOSTILE_STRINGS",
    "AppStack",
    "AtriumBrowser",
    "AtriumClient",
    "AuthorizationFailures",
    "CatalogErrors",
    "ConsolePage",
    "GraphQLErrors",
    "GraphQLWebSocket",
    "HostileInputFailures",
    "LoopThread",
    "PlanDifferences",
    "PlanRuns",
    "Served",
    "Snapshot",
    "Statements",
    "WebSocketClosed",
    "atrium_serve",
    "authz_callers",
    "check_authorization",
    "check_hostile_inputs",
    "check_plan_equivalence",
    "installed_plugin_ids",
    "plugin_fields",
    "plugin_queries",
    "select_plugins",
]

_WHERE = {
    "AuthorizationFailures": "authz",
    "authz_callers": "authz",
    "check_authorization": "authz",
    "AtriumBrowser": "browser",
    "ConsolePage": "browser",
    "Snapshot": "browser",
    "AppStack": "client",
    "AtriumClient": "client",
    "CatalogErrors": "client",
    "GraphQLErrors": "client",
    "PlanRuns": "client",
    "Statements": "client",
    "HostileInputFailures": "hostile",
    "check_hostile_inputs": "hostile",
    "HOSTILE_INTS": "hostile_values",
    "HOSTILE_STRINGS": "hostile_values",
    "LoopThread": "loops",
    "plugin_fields": "operations",
    "plugin_queries": "operations",
    "PlanDifferences": "plans",
    "check_plan_equivalence": "plans",
    "installed_plugin_ids": "plugins",
    "select_plugins": "plugins",
    "Served": "serve",
    "atrium_serve": "serve",
    "GraphQLWebSocket": "websocket",
    "WebSocketClosed": "websocket",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
