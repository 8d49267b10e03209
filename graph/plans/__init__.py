"""Compiled plans: known operations run without the generic executor, answering the same.

A persisted or trusted document is the same text every time it runs, so whatever graphql-core
and Strawberry work out from the document on each request can be worked out once: which fields
each selection set selects on each concrete type (fragments and ``@skip``/``@include`` resolved,
once per combination of the variables those directives read), how each field is resolved and
how its value is completed. A ``Plan`` keeps that, and its runner walks the plan:

- a field with no resolver of its own is an attribute read (no Info, no wrapper);
- a resolver without field extensions is called directly with its converted arguments
  (arguments written as literals are coerced once); one with extensions (``Authorize``,
  Relay connections, a plugin's) goes through Strawberry's own wrapper, unchanged;
- leaves of the built-in scalars are checked inline, others coerced by their type;
- an asynchronous resolver runs as one task, and nothing more: no wrapper coroutine, no
  ``gather``; its value is completed once the task is done. Tasks of one level run in the
  same turn of the loop, so loaders batch level by level as under the generic executor.

The answer is the generic executor's, byte for byte once encoded: the same values, null
propagation (graphql-core's rules, errors below a nulled position dropped), error messages,
paths and locations, ``extensions.code``s, cache policy and tags. ``tests/graph/test_plans.py``
checks that differentially. Whatever the plan cannot vouch for goes the generic way: a document
not yet validated by a generic run, variables that do not coerce or that the input guard or the
cost limit refuses, introspection, ``@defer``/``@stream``, subscriptions, and every document
when a plugin adds a schema extension (its hooks expect to run).

Plans are built at a document's first use after it validated, kept by (text, operation name)
in a bounded LRU, and each keeps at most a few ``@skip``/``@include`` variants.

The modules, in the order they import each other:

- ``planner``: ``Plans`` (the LRU) and ``Plan`` (one operation compiled, and run per request);
- ``runner``: ``Run``, one execution of a plan: fields resolved, resolvers' tasks awaited;
- ``completion``: values completed at their place in the answer, null propagation;
- ``nodes``: what a plan is made of (field definitions, object plans, field plans, shapes).
"""

from __future__ import annotations

from graph.plans.planner import NotPlannable, Plan, Plans

__all__ = ["NotPlannable", "Plan", "Plans"]
