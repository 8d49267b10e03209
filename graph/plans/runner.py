"""Running a plan: one execution walks the plan's nodes.

A field with no resolver of its own is an attribute read (no Info, no wrapper); a resolver
without field extensions is called directly with its converted arguments; one with extensions
(``Authorize``, Relay connections, a plugin's) goes through Strawberry's own wrapper,
unchanged. An asynchronous resolver runs as one task, and nothing more: no wrapper coroutine,
no ``gather``; its value is completed (``completion``) once the task is done. Tasks of one
level run in the same turn of the loop, so loaders batch level by level as under the generic
executor.
"""

from __future__ import annotations

from asyncio import Future, ensure_future, get_running_loop
from collections.abc import Iterable
from types import CoroutineType
from typing import Any

from graphql import GraphQLError, GraphQLResolveInfo, located_error
from graphql.execution.executor import CollectedErrors
from graphql.execution.values import VariableValues, get_argument_values
from graphql.pyutils import Path
from graphql.pyutils.gather_with_cancel import gather_with_cancel
from graphql.type.definition import GraphQLResolveInfoHelpers
from strawberry.execution.is_awaitable import optimized_is_awaitable
from strawberry.types.arguments import convert_arguments

from graph.plans.completion import Boundary, Completion, is_ready
from graph.plans.nodes import (
    ATTRIBUTE,
    CALL,
    CALL_DEFAULT,
    FAST_ATTRIBUTE,
    FAST_OTHER,
    FAST_SELF_CALL,
    FAST_TYPENAME,
    NON_NULL,
    TYPENAME,
    Compiled,
    FieldPlan,
    ObjectPlan,
    Shape,
    new_path,
)

__all__ = ["Run"]


class _Suspended:
    """A resolver's awaitable, run as one task (a future is waited on as it is), and where
    its value goes once done."""

    __slots__ = ("boundary", "container", "field", "future", "key", "path", "run", "shape")

    def __init__(
        self,
        run: Run,
        future: Future[Any],
        field: FieldPlan,
        shape: Shape,
        container: Any,
        key: Any,
        path: Path,
        boundary: Boundary,
    ) -> None:
        self.run = run
        self.future = future
        self.field = field
        self.shape = shape
        self.container = container
        self.key = key
        self.path = path
        self.boundary = boundary

    def __call__(self, _future: Any) -> None:  # done
        run = self.run
        run.ready.append(self)
        wake = run.wake
        if wake is not None and not wake.done():
            wake.set_result(None)


class Run(Completion):
    """One execution of a plan."""

    def __init__(self, plan: Compiled, context: Any, variables: VariableValues) -> None:
        self.plan = plan
        self.context = context
        self.variables = variables
        self.errors = CollectedErrors()
        self.nulled = False
        self.ready: list[_Suspended] = []
        self.waiting: set[_Suspended] = set()
        self.wake: Future[None] | None = None
        self.failure: BaseException | None = None
        self.holder: dict[str, Any] = {"data": None}
        self.root_boundary = Boundary(self.holder, "data", None)
        self.helpers = GraphQLResolveInfoHelpers(gather=_gather, track=_track)
        self.loop = get_running_loop()

    async def execute(self, root: ObjectPlan, serially: bool) -> dict[str, Any] | None:
        holder = self.holder
        try:
            try:
                if serially:
                    data: dict[str, Any] = {}
                    holder["data"] = data
                    for field in root.fields:
                        path = new_path((None, field.key, root.type_name))
                        data[field.key] = self.field(field, None, data, path, self.root_boundary)
                        if self.waiting:
                            await self.drain()
                        if holder["data"] is None:
                            break
                else:
                    holder["data"] = self.fields(root, None, None, self.root_boundary)
                    if self.waiting:
                        await self.drain()
            except GraphQLError as error:
                self.errors.add(error, None)
                holder["data"] = None
                self.nulled = True
                if self.waiting:
                    await self.drain()
        except BaseException:
            self.abandon()
            raise
        if self.failure is not None:
            raise self.failure
        data = holder["data"]
        return data if isinstance(data, dict) else None

    # -- fields -----------------------------------------------------------------------------

    def fields(
        self, plan: ObjectPlan, source: Any, path: Path | None, boundary: Boundary
    ) -> dict[str, Any]:
        result: dict[str, Any] = {}
        type_name = plan.type_name
        for field in plan.fields:
            fast = field.fast
            key = field.key
            if fast == FAST_TYPENAME:
                result[key] = type_name
                continue
            if fast == FAST_OTHER:
                result[key] = self.field(
                    field, source, result, new_path((path, key, type_name)), boundary
                )
                continue
            # An attribute, or a resolver taking nothing but the object: no Info, no Path
            # unless the value needs completing or fails.
            try:
                if fast == FAST_ATTRIBUTE:
                    value = getattr(source, field.python_name)  # type: ignore[arg-type]
                else:
                    value = field.definition.resolve(source)  # type: ignore[misc]
            except Exception as raw:
                result[key] = self.field_error(raw, field, new_path((path, key, type_name)))
                continue
            value_type = type(value)
            if value_type is field.ready_type or (value is None and field.nullable):
                result[key] = value
                continue
            if field.simple and is_ready(field.shape, value):
                result[key] = list(value) if value_type is list else value
                continue
            if fast == FAST_SELF_CALL and optimized_is_awaitable(value):
                result[key] = None
                self.suspend(
                    value,
                    field,
                    field.shape,
                    result,
                    key,
                    new_path((path, key, type_name)),
                    boundary,
                )
                continue
            result[key] = self.completed(
                field, value, result, new_path((path, key, type_name)), boundary
            )
        return result

    def field(
        self,
        field: FieldPlan,
        source: Any,
        container: dict[str, Any],
        path: Path,
        boundary: Boundary,
    ) -> Any:
        definition = field.definition
        try:
            kind = field.kind
            if kind == ATTRIBUTE:
                value = getattr(source, field.python_name)  # type: ignore[arg-type]
            elif kind == TYPENAME:
                return definition.parent_name
            elif kind == CALL_DEFAULT:
                value = definition.resolve(source, definition.strawberry.python_name)  # type: ignore[misc, union-attr]
            else:
                args = field.args
                if args is None:
                    args = get_argument_values(
                        definition.field,
                        field.node,
                        self.variables,
                        field.details[0].fragment_variable_values,
                        self.plan.hide_suggestions,
                    )
                if kind == CALL:
                    value = self.call(field, source, path, args)
                else:
                    value = definition.resolve(source, self.info(field, path), **args)  # type: ignore[misc]
            if optimized_is_awaitable(value):
                self.suspend(value, field, field.shape, container, field.key, path, boundary)
                return None
            return self.complete(field.shape, value, container, field.key, path, boundary)
        except Exception as raw:
            return self.field_error(raw, field, path)

    def completed(
        self,
        field: FieldPlan,
        value: Any,
        container: Any,
        path: Path,
        boundary: Boundary,
    ) -> Any:
        """The field's value completed; a failure is handled as the field's error."""
        try:
            return self.complete(field.shape, value, container, field.key, path, boundary)
        except Exception as raw:
            return self.field_error(raw, field, path)

    def call(self, field: FieldPlan, source: Any, path: Path, args: dict[str, Any]) -> Any:
        """A Strawberry resolver without extensions, called as Strawberry would call it."""
        definition = field.definition
        kwargs: dict[str, Any] = {}
        if definition.info_name is not None or definition.arguments:
            plan = self.plan
            info = plan.config.info_class(
                _raw_info=self.info(field, path),
                _field=definition.strawberry,  # type: ignore[arg-type]
            )
            if definition.arguments:
                kwargs = convert_arguments(
                    args,
                    definition.arguments,
                    scalar_registry=plan.scalar_registry,
                    config=plan.config,
                    info=info,
                )
            if definition.info_name is not None:
                kwargs[definition.info_name] = info
        for name in definition.root_name:
            kwargs[name] = source
        resolve = definition.resolve
        assert resolve is not None
        if definition.self_argument:
            return resolve(source, **kwargs)
        return resolve(**kwargs)

    def info(self, field: FieldPlan, path: Path) -> Any:
        plan = self.plan
        definition = field.definition
        # As the named tuple's own constructor would, without its Python-level __new__.
        return tuple.__new__(
            GraphQLResolveInfo,
            (
                definition.field_name,
                field.nodes,
                field.return_type,
                definition.parent,
                path,
                plan.graphql_schema,
                plan.fragment_definitions,
                None,
                plan.operation,
                self.variables,
                self.context,
                optimized_is_awaitable,
                None,
                self.helpers,
            ),
        )

    def field_error(self, raw: Exception, field: FieldPlan, path: Path) -> Any:
        error = located_error(raw, field.nodes, path.as_list())
        if not field.nullable:
            raise error
        self.errors.add(error, path)
        return None

    # -- awaiting -----------------------------------------------------------------------------

    def suspend(
        self,
        awaitable: Any,
        field: FieldPlan,
        shape: Shape,
        container: Any,
        key: Any,
        path: Path,
        boundary: Boundary,
    ) -> None:
        """Leave a resolver's awaitable to run, and complete its value once it is done.

        A coroutine becomes a task of its own, and nothing more: no wrapper coroutine, no
        gather. It has to be a task: code below a resolver may rely on the task it runs in
        (asyncio.timeout, aiohttp's timeouts and anyio's cancel scopes cancel the current
        task), so coroutines are never stepped by hand. A future is waited on as it is."""
        future = (
            self.loop.create_task(awaitable)
            if type(awaitable) is CoroutineType
            else ensure_future(awaitable)
        )
        suspended = _Suspended(self, future, field, shape, container, key, path, boundary)
        self.waiting.add(suspended)
        future.add_done_callback(suspended)

    async def drain(self) -> None:
        loop = get_running_loop()
        while self.waiting:
            if not self.ready:
                self.wake = loop.create_future()
                try:
                    await self.wake
                finally:
                    self.wake = None
            ready, self.ready = self.ready, []
            for suspended in ready:
                self.waiting.discard(suspended)
                future = suspended.future
                if future.cancelled():
                    continue  # below a nulled position: its answer cannot be seen
                error = future.exception()
                if error is None:
                    self.settle(suspended, future.result())
                elif isinstance(error, Exception):
                    self.fail(suspended, error)
                elif self.failure is None:  # an exit, or a cancellation from below
                    self.failure = error
            if self.failure is not None:
                raise self.failure

    def abandon(self) -> None:
        for suspended in self.waiting:
            suspended.future.cancel()
        self.waiting.clear()

    def settle(self, suspended: _Suspended, value: Any) -> None:
        container, key, path = suspended.container, suspended.key, suspended.path
        if self.nulled and self.errors.has_nulled_position(path):
            return
        try:
            container[key] = self.complete(
                suspended.shape, value, container, key, path, suspended.boundary
            )
        except Exception as raw:
            self.fail(suspended, raw)

    def fail(self, suspended: _Suspended, raw: Exception) -> None:
        path = suspended.path
        if self.nulled and self.errors.has_nulled_position(path):
            return
        error = located_error(raw, suspended.field.nodes, path.as_list())
        if suspended.shape.kind != NON_NULL:
            self.errors.add(error, path)
            suspended.container[suspended.key] = None
            return
        boundary = suspended.boundary
        self.errors.add(error, boundary.path)
        boundary.container[boundary.key] = None
        self.nulled = True
        # What still runs below the nulled position cannot be seen: cancelled, as
        # graphql-core cancels the siblings of a failure.
        for other in list(self.waiting):
            if self.errors.has_nulled_position(other.path):
                other.future.cancel()


async def _gather(values: Iterable[Any]) -> list[Any]:
    return await gather_with_cancel(*values)


def _track(values: Iterable[Any]) -> None:
    for value in values:
        if optimized_is_awaitable(value):
            future = ensure_future(value)
            _BACKGROUND.add(future)
            future.add_done_callback(_BACKGROUND.discard)


_BACKGROUND: set[Future[Any]] = set()
