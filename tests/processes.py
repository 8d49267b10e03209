"""The processes tests start for servers that must answer whatever the test's own interpreter is
doing (tests/kube_process.py, tests/change_receiver.py): forked from one server process per
pytest process (multiprocessing's ``forkserver``), which has their modules loaded.

Forked from the server, not from the test process: none of its threads or event loops come
along. With the modules loaded once in the server, a child starts in milliseconds instead of
importing aiohttp, kmock and the rest again. The server is one per process and takes the list
of modules to load when it starts, so the list is here, whole: a module that set its own
would replace the others' (the last import wins), and theirs would be imported again in each
child."""

from __future__ import annotations

import multiprocessing

__all__ = ["PROCESSES"]

PROCESSES = multiprocessing.get_context("forkserver")
PROCESSES.set_forkserver_preload(["tests.kube_process", "tests.change_receiver"])
