"""A throwaway OpenLDAP for the LDAP scenario: slapadd an LDIF, then serve it on a free port.

The same recipe as the tests' server (mdb, the dynlist overlay computing nested memberOf and
expanding nested members), kept here because the benchmark does not import from tests/.
Loading is slapadd, offline and quick (no per-entry round trips), and timed apart from the
syncs. slapd's log goes to a file in the directory, shown if it fails to start.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.directory import GROUPS_DN, SUFFIX, USERS_DN

__all__ = ["ROOT_DN", "ROOT_PASSWORD", "Slapd", "running_slapd"]

ROOT_DN: Final = f"cn=admin,{SUFFIX}"
ROOT_PASSWORD: Final = "bench-root-password"  # a throwaway server on 127.0.0.1
SCHEMAS: Final = ("core", "cosine", "inetorgperson", "nis", "dyngroup")
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
        raise FileNotFoundError(f"{name} is not installed (Debian: apt-get install slapd)")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


def _wait_for(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"slapd did not start: {log.read_text()[-2000:]}") from None
            time.sleep(0.05)


@contextlib.contextmanager
def running_slapd(directory: Path, ldif: str) -> Iterator[Slapd]:
    """slapadd ``ldif`` below the base entries into ``directory``, serve it, stop it after."""
    conf = _configure(directory)
    (directory / "data.ldif").write_text(_BASE + ldif)
    started = time.perf_counter()
    loaded = subprocess.run(
        [_program("slapadd"), "-q", "-f", str(conf), "-l", str(directory / "data.ldif")],
        capture_output=True,
        text=True,
    )
    if loaded.returncode != 0:
        raise RuntimeError(f"slapadd failed: {loaded.stderr[-2000:]}")
    load_seconds = time.perf_counter() - started
    port = _free_port()
    log = directory / "slapd.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [_program("slapd"), "-d", "0", "-f", str(conf), "-h", f"ldap://127.0.0.1:{port}/"],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for(process, port, log)
        yield Slapd(f"ldap://127.0.0.1:{port}", load_seconds)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
