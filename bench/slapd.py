"""A throwaway OpenLDAP for the LDAP scenario: slapadd an LDIF, then serve it on a free port.

The same recipe as the tests' server (mdb, the dynlist overlay computing nested memberOf and
expanding nested members), kept here because the benchmark does not import from tests/.
Loading is slapadd, offline and quick (no per-entry round trips), and timed apart from the
syncs. slapd's log goes to a file in the directory, shown if it fails to start.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.directory import GROUPS_DN, SUFFIX, USERS_DN
from bench.harness import BenchFailure
from bench.harness.host import free_port
from bench.harness.process import spawn

__all__ = ["ROOT_DN", "ROOT_PASSWORD", "Slapd", "running_slapd"]

ROOT_DN: Final = f"cn=admin,{SUFFIX}"
ROOT_PASSWORD: Final = "bench-root-password"  # a throwaway server on 127.0.0.1
SCHEMAS: Final = ("core", "cosine", "inetorgperson", "nis", "dyngroup")
START_TIMEOUT_S: Final = 30.0
_BASE: Final = f"""dn: {SUFFIX}
objectClass: dcObject
objectClass: organization
o: Example
dc: example

dn: {USERS_DN}
objectClass: organizationalUnit
ou: people

dn: {GROUPS_DN}
objectClass: organizationalUnit
ou: groups

"""


@dataclass(frozen=True, slots=True)
class Slapd:
    url: str
    load_seconds: float  # slapadd


def _program(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
    if found is None:
        raise BenchFailure(f"{name} is not installed (Debian: apt-get install slapd)")
    return found


def _configure(directory: Path) -> Path:
    includes = "\n".join(f"include /etc/ldap/schema/{name}.schema" for name in SCHEMAS)
    data = directory / "data"
    data.mkdir()
    conf = directory / "slapd.conf"
    conf.write_text(f"""{includes}
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload dynlist
pidfile {directory}/slapd.pid
database mdb
maxsize 4294967296
suffix "{SUFFIX}"
rootdn "{ROOT_DN}"
rootpw {ROOT_PASSWORD}
directory {data}
overlay dynlist
dynlist-attrset groupOfURLs memberURL member+memberOf@groupOfNames*
""")
    return conf


async def _listening(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    return True


@contextlib.asynccontextmanager
async def running_slapd(ldif: str) -> AsyncIterator[Slapd]:
    """slapadd ``ldif`` below the base entries into a directory of its own, serve it, stop it
    and delete it after."""
    with tempfile.TemporaryDirectory(prefix="atrium-bench-ldap-") as tmp:
        directory = Path(tmp)
        conf = _configure(directory)
        (directory / "data.ldif").write_text(_BASE + ldif)
        started = time.perf_counter()
        loaded = await asyncio.to_thread(
            subprocess.run,
            [_program("slapadd"), "-q", "-f", str(conf), "-l", str(directory / "data.ldif")],
            capture_output=True,
            text=True,
        )
        if loaded.returncode != 0:
            raise BenchFailure(f"slapadd failed: {loaded.stderr[-2000:]}")
        load_seconds = time.perf_counter() - started
        port = free_port()
        argv = [_program("slapd"), "-d", "0", "-f", str(conf), "-h", f"ldap://127.0.0.1:{port}/"]
        child = await spawn("slapd", argv, directory / "slapd.log")
        try:
            await child.until(lambda: _listening(port), START_TIMEOUT_S, "listening")
            yield Slapd(f"ldap://127.0.0.1:{port}", load_seconds)
        finally:
            await child.stop(10.0)
