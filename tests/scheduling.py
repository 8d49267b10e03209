"""How `make test` shares test modules among its processes (pytest-xdist, ``--dist loadfile``):
the longest modules first, and a process given another module only once it has nothing left
to run.

xdist's own file scheduling orders modules by their number of tests, so the benchmark's
smoke tests (a few tests of a minute or more each) came last and one process ran them alone
while the other stood idle; and it hands a process a new module while two of its tests are
still pending, so a process busy with a long module could hold the next long one too. Here the
modules named in ``LONGEST_FIRST`` (measured: ``--durations``, per module) start first, in that
order, then the rest by number of tests, most first; a process gets a module when its last one
is down to the test it is running (an xdist worker runs a test only once it knows the next, so
it is idle by then)."""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling

__all__ = ["LONGEST_FIRST", "LongestFirst", "module_rank"]

# The longest modules, longest first: measured in a whole run on two processes; a module not
# named here ranks after them all, as xdist would order it.
LONGEST_FIRST = (
    "tests/test_hostile_input.py",
    "tests/graph/test_change_events.py",
    "tests/console/test_console_api_definitions.py",
    "tests/console/test_console_journeys.py",
    "tests/console/test_console_signin.py",
    "tests/test_cli_schema.py",
    "tests/production/test_deploy_image.py",
    "tests/console/test_console_lighthouse.py",
    "tests/test_bench_console.py",
    "tests/graph/test_plans.py",
    "tests/production/test_drain.py",
    "tests/console/test_example_plugin_wheel.py",
    "tests/test_bench_replicas.py",
    "tests/test_kube_harness.py",
    "tests/test_cli.py",
    "tests/console/test_console_quality.py",
    "tests/plugins/test_pincompute.py",
    "tests/ssr/test_pages.py",
    "tests/graph/test_catalog_api.py",
    "tests/test_bench.py",
    "tests/graph/test_authz_matrix.py",
)


def module_rank(module: str, tests: int) -> tuple[int, int]:
    """Where a module (its path from the root, with ``tests`` tests) comes in the queue."""
    if module in LONGEST_FIRST:
        return (LONGEST_FIRST.index(module), 0)
    return (len(LONGEST_FIRST), -tests)


class LongestFirst(LoadFileScheduling):
    """xdist's file scheduling, ordered by ``module_rank``, one module at a time."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        # The queue follows the collection's order, which pytest_collection_modifyitems sorts.
        config.option.loadscopereorder = False

    def _reschedule(self, node: Any) -> None:
        if node.shutting_down:
            return
        while self.workqueue and self._pending_of(self.assigned_work[node]) <= 1:
            self._assign_work_unit(node)
        if not self.workqueue:
            node.shutdown()  # it runs what it was given, then stops
