"""A throwaway OpenLDAP server for tests: slapd with an LDIF loaded, on a free local port."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import ldap3
import trustme

SUFFIX = "dc=example,dc=org"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PASSWORD = "test-root-password"
USERS_DN = f"ou=people,{SUFFIX}"
GROUPS_DN = f"ou=groups,{SUFFIX}"
SCHEMAS = ("core", "cosine", "inetorgperson", "nis", "dyngroup")
AD_SCHEMAS = ("core", "cosine", "inetorgperson", "nis", "msuser")
BASE_LDIF = f"""dn: {SUFFIX}
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Slapd:
    directory: Path
    port: int
    process: subprocess.Popen[bytes]
    tls_port: int | None = None

    @property
    def url(self) -> str:
        return f"ldap://127.0.0.1:{self.port}"

    @property
    def tls_url(self) -> str:
        assert self.tls_port is not None, "started without TLS"
        return f"ldaps://127.0.0.1:{self.tls_port}"

    @contextmanager
    def connection(self) -> Iterator[ldap3.Connection]:
        """A root connection, for tests that change the directory under a running sync."""
        conn = ldap3.Connection(
            ldap3.Server(self.url), ROOT_DN, ROOT_PASSWORD, auto_bind=True, raise_exceptions=True
        )
        try:
            yield conn
        finally:
            conn.unbind()

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()


def start_slapd(
    directory: Path,
    ldif: str,
    *,
    schemas: tuple[str, ...] = SCHEMAS,
    ca: trustme.CA | None = None,
) -> Slapd:
    """slapadd the LDIF (after the base entries), then serve it; memberOf is computed (dynlist).
    With a CA, the server also speaks StartTLS and ldaps:// with a certificate for 127.0.0.1."""
    data = directory / "data"
    data.mkdir(parents=True)
    includes = "\n".join(f"include /etc/ldap/schema/{name}.schema" for name in schemas)
    dynlist = (
        "overlay dynlist\ndynlist-attrset groupOfURLs memberURL member+memberOf@groupOfNames*\n"
        if "msuser" not in schemas
        else ""
    )
    tls = ""
    if ca is not None:
        cert = ca.issue_cert("127.0.0.1")
        cert.cert_chain_pems[0].write_to_path(str(directory / "cert.pem"))
        cert.private_key_pem.write_to_path(str(directory / "key.pem"))
        ca.cert_pem.write_to_path(str(directory / "ca.pem"))
        tls = (
            f"TLSCACertificateFile {directory}/ca.pem\n"
            f"TLSCertificateFile {directory}/cert.pem\n"
            f"TLSCertificateKeyFile {directory}/key.pem\n"
        )
    conf = directory / "slapd.conf"
    conf.write_text(f"""{includes}
{tls}
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload dynlist
pidfile {directory}/slapd.pid
database mdb
maxsize 1073741824
suffix "{SUFFIX}"
rootdn "{ROOT_DN}"
rootpw {ROOT_PASSWORD}
directory {data}
{dynlist}""")
    (directory / "data.ldif").write_text(BASE_LDIF + "\n" + ldif)
    subprocess.run(
        ["slapadd", "-q", "-f", str(conf), "-l", str(directory / "data.ldif")],
        check=True,
        capture_output=True,
    )
    port = _free_port()
    tls_port = _free_port() if ca is not None else None
    urls = f"ldap://127.0.0.1:{port}/" + (f" ldaps://127.0.0.1:{tls_port}/" if tls_port else "")
    process = subprocess.Popen(
        ["slapd", "-d", "0", "-f", str(conf), "-h", urls, "-u", "root", "-g", "root"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stderr = process.stderr.read().decode() if process.stderr else ""
                raise RuntimeError(f"slapd did not start: {stderr}") from None
            time.sleep(0.02)
    return Slapd(directory, port, process, tls_port)


def person(uid: str, cn: str, *, mail: str | None = None, extra: str = "") -> str:
    lines = [
        f"dn: uid={uid},{USERS_DN}",
        "objectClass: inetOrgPerson",
        f"uid: {uid}",
        f"cn: {cn}",
        f"sn: {cn.split()[-1] if cn.split() else cn}",
        f"displayName: {cn}",
    ]
    if mail:
        lines.append(f"mail: {mail}")
    return "\n".join(lines) + ("\n" + extra if extra else "") + "\n"


def group(cn: str, members: list[str], *, description: str | None = None) -> str:
    lines = [f"dn: cn={cn},{GROUPS_DN}", "objectClass: groupOfNames", f"cn: {cn}"]
    if description:
        lines.append(f"description: {description}")
    lines += [f"member: {m}" for m in members] or [f"member: {ROOT_DN}"]
    return "\n".join(lines) + "\n"


def user_dn(uid: str) -> str:
    return f"uid={uid},{USERS_DN}"


def group_dn(cn: str) -> str:
    return f"cn={cn},{GROUPS_DN}"
