"""Dask, safely by default: the certificates a cluster's TLS runs on, and what rlcourse refuses.

A Dask scheduler, and every worker and nanny, runs whatever Python a connecting client sends
it, as the user it runs as: on a grading cluster that user reads the course root, the hidden
graders and the solutions. Started as `dask scheduler` starts by default, it listens on every
interface without TLS or credentials, so anyone who reaches the port (a student's JupyterHub
server on the same network) runs code as the grader. Dask's answer is mutual TLS: every
connection, in either direction, presents a certificate signed by the cluster's own CA, and a
peer without one is refused during the handshake, before any message is read.

* `make_certificates` (`rlcourse dask certs DIR`) writes that CA and a certificate with its key
  for each role: the scheduler, the workers (and their nannies) and the client (rlcourse).
  Keys are written 0600 in a folder of mode 0700. The CA's own key is never written: a set is
  replaced as a whole (run the command again into a new folder), so no file here can sign a
  new certificate.
* `Scheduler.checked` is what `--scheduler` accepts: `tls://` with the client's certificate
  (`--dask-certs DIR`), or plain `tcp://` to the loopback only; any other plain address is
  refused unless the instructor says `--insecure`.
* `check_listeners` asks a connected cluster where each of its servers listens (the scheduler,
  every worker and nanny: what an attacker would connect to, not what they advertise), and
  refuses a plain listener on anything but the loopback: a worker started without `--host`
  advertises 127.0.0.1 and listens on 0.0.0.0.

A plain cluster on the loopback is still open to every user of that machine (a JupyterHub on
the same host); `rlcourse` says so when it grades on one. The embedded cluster of
`--backend dask` uses TLS with temporary in-memory certificates (Dask's `security=True`).
"""
from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import os
import socket
import urllib.parse
from pathlib import Path

from rlcourse.course.config import CourseError

ROLES = ("scheduler", "worker", "client")
"""The certificates a cluster needs: each process presents its role's certificate."""
SECURE_SCHEMES = ("tls",)
PLAIN_SCHEMES = ("tcp", "ws", "ucx")
INSECURE_FLAG = "--insecure"


class UnsafeScheduler(CourseError):
    """A Dask scheduler rlcourse will not send the class's notebooks to; the message says why
    and what to do."""


# --- the certificates ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Certificates:
    """A folder `make_certificates` wrote: `ca.pem`, and `<role>.pem` with `<role>-key.pem`."""

    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.pem"

    def certificate(self, role: str) -> Path:
        return self.folder / f"{role}.pem"

    def key(self, role: str) -> Path:
        return self.folder / f"{role}-key.pem"

    def check(self, role: str = "client") -> "Certificates":
        """Refuse a folder without the CA and `role`'s pair, or whose key others may read."""
        for path in (self.ca, self.certificate(role), self.key(role)):
            if not path.is_file():
                raise UnsafeScheduler(f"{path} is missing: `rlcourse dask certs {self.folder}` writes "
                                      "the cluster's certificates")
        if self.key(role).stat().st_mode & 0o077:
            raise UnsafeScheduler(f"{self.key(role)} may be read by other users: whoever holds it "
                                  "runs code on the cluster (chmod 600 it)")
        return self

    def security(self, role: str = "client"):
        """Dask's `Security` for `role`: mutual TLS against this CA, nothing in clear."""
        from distributed.security import Security

        self.check(role)
        options = {"tls_ca_file": str(self.ca), f"tls_{role}_cert": str(self.certificate(role)),
                   f"tls_{role}_key": str(self.key(role))}
        return Security(require_encryption=True, **options)

    def commands(self, host: str = "HOST", port: int = 8786) -> list[str]:
        """How to start a cluster on these certificates (what `rlcourse dask certs` prints)."""
        def tls(role: str) -> str:
            return (f"--tls-ca-file {self.ca} --tls-cert {self.certificate(role)} "
                    f"--tls-key {self.key(role)}")

        return [f"dask scheduler --protocol tls --port {port} --no-dashboard {tls('scheduler')}",
                f"dask worker tls://{host}:{port} --nthreads 1 --no-dashboard {tls('worker')}",
                f"rlcourse autograde ASSIGNMENT --scheduler tls://{host}:{port} --dask-certs {self.folder}"]


def make_certificates(folder: Path, *, hosts=(), days: int = 365) -> Certificates:
    """Write a new CA and a certificate and key per role into `folder` (made 0700; never over
    an existing file). `hosts`: the names and addresses the scheduler and workers are reached
    by, recorded as the certificates' subject alternative names (Dask checks the CA, not the
    names; a proxy or another client may check them)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    folder = Path(folder)
    certificates = Certificates(folder)
    names = [certificates.ca, *(path for role in ROLES
                                for path in (certificates.certificate(role), certificates.key(role)))]
    taken = [str(path) for path in names if path.exists()]
    if taken:
        raise FileExistsError(f"{', '.join(taken)} already exist: write a new set into an empty folder")
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=days)

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "rlcourse"),
                          x509.NameAttribute(NameOID.COMMON_NAME, common)])

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name("rlcourse dask CA")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now).not_valid_after(until)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    _write(certificates.ca, ca.public_bytes(serialization.Encoding.PEM), 0o644)
    alternative = _alternative_names(["localhost", "127.0.0.1", "::1", *hosts])
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        certificate = (
            x509.CertificateBuilder().subject_name(name(f"rlcourse dask {role}")).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(until)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False,
                                         content_commitment=False, data_encipherment=False,
                                         key_agreement=True, key_cert_sign=False, crl_sign=False,
                                         encipher_only=False, decipher_only=False), critical=True)
            # every process of a cluster both listens and connects
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                  ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName(alternative), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
        _write(certificates.key(role), key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()), 0o600)
        _write(certificates.certificate(role), certificate.public_bytes(serialization.Encoding.PEM), 0o644)
    return certificates


def _alternative_names(hosts) -> list:
    from cryptography import x509

    found, seen = [], set()
    for host in hosts:
        if host in seen:
            continue
        seen.add(host)
        try:
            found.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            found.append(x509.DNSName(host))
    return found


def _write(path: Path, data: bytes, mode: int) -> None:
    """A new file created with `mode` from the start (a key is never readable by others, not
    even for a moment)."""
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(handle, "wb") as stream:
        stream.write(data)


# --- what rlcourse connects to ------------------------------------------------------------------
def _scheme_and_host(address: str) -> tuple[str, str]:
    scheme, separator, _ = address.partition("://")
    if not separator:
        scheme, address = "tcp", f"tcp://{address}"  # Dask's default protocol
    host = urllib.parse.urlsplit(address).hostname or ""
    return scheme.lower(), host


def is_loopback(host: str) -> bool:
    """Whether every address `host` names is this machine's loopback (a name that does not
    resolve, or that resolves to any other address, is not)."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = {entry[4][0] for entry in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(address.split("%")[0]).is_loopback
                               for address in found)


@dataclasses.dataclass(frozen=True)
class Scheduler:
    """A Dask scheduler rlcourse may send notebooks to: its address, the client's certificates
    (for tls://) and whether the instructor accepted a plain connection beyond the loopback."""

    address: str
    certificates: Path | None = None
    insecure: bool = False

    @classmethod
    def checked(cls, address: "str | Scheduler", *, certificates: Path | None = None,
                insecure: bool = False) -> "Scheduler":
        """The scheduler `--scheduler ADDRESS` names, or UnsafeScheduler: tls:// needs the
        client's certificates, and a plain address must be the loopback unless `insecure`."""
        if isinstance(address, Scheduler):
            return address
        scheme, host = _scheme_and_host(address)
        if scheme in SECURE_SCHEMES:
            if certificates is None:
                raise UnsafeScheduler(f"{address}: a TLS scheduler needs the client's certificate: "
                                      "--dask-certs DIR (the folder `rlcourse dask certs DIR` wrote)")
            Certificates(Path(certificates)).check("client")
        elif scheme in PLAIN_SCHEMES:
            if certificates is not None:
                raise UnsafeScheduler(f"{address}: certificates are for tls:// addresses; start the "
                                      f"scheduler with TLS and use tls://{host or 'HOST'}:PORT")
            if not is_loopback(host) and not insecure:
                raise UnsafeScheduler(
                    f"{address} is a plain {scheme}:// address beyond this machine: whoever reaches "
                    "it runs code as the grader (reads the graders and solutions). Use TLS "
                    "(`rlcourse dask certs DIR`, then --scheduler tls://HOST:PORT --dask-certs DIR; "
                    f"docs/operators/dask.md), or say {INSECURE_FLAG} on a network only staff can reach")
        else:
            raise UnsafeScheduler(f"{address}: rlcourse connects to tls:// schedulers, or tcp:// on "
                                  "the loopback")
        return cls(address, Path(certificates) if certificates is not None else None, insecure)

    @property
    def plain(self) -> bool:
        return self.certificates is None

    def security(self):
        """Dask's `Security` for the client, or None for a plain scheduler."""
        return None if self.plain else Certificates(self.certificates).security("client")

    def arguments(self) -> list[str]:
        """The command-line options that name this scheduler (to a grading process of `rlcourse web`)."""
        return ["--scheduler", self.address,
                *(["--dask-certs", str(self.certificates)] if self.certificates else []),
                *([INSECURE_FLAG] if self.insecure else [])]


def listeners(client) -> dict[str, list[str]]:
    """Where each server of the cluster listens: the scheduler, and every worker and nanny
    (their bound addresses, which may differ from the addresses they advertise)."""
    def bound(dask_scheduler=None, dask_worker=None):
        server = dask_scheduler or dask_worker
        return [listener.listen_address for listener in getattr(server, "listeners", [])]

    found = {"scheduler": client.run_on_scheduler(bound)}
    for address, addresses in client.run(bound).items():
        found[f"worker {address}"] = addresses
    try:
        nannies = client.run(bound, nanny=True)
    except (ValueError, KeyError):  # workers started without a nanny
        nannies = {}
    for address, addresses in nannies.items():
        found[f"nanny of {address}"] = addresses
    return found


def check_listeners(scheduler: Scheduler, found: dict[str, list[str]]) -> None:
    """Refuse a cluster that has a plain listener beyond the loopback (unless --insecure): it
    runs code for whoever connects to it."""
    if scheduler.insecure:
        return
    exposed = []
    for server, addresses in found.items():
        for address in addresses:
            scheme, host = _scheme_and_host(address)
            if scheme not in SECURE_SCHEMES and not is_loopback(host):
                exposed.append(f"{server} on {address}")
    if exposed:
        raise UnsafeScheduler(
            f"the cluster at {scheduler.address} listens in clear beyond the loopback ("
            f"{'; '.join(exposed)}): whoever reaches those ports runs code as the grader. Start "
            "the scheduler and workers with TLS (`rlcourse dask certs`), or with --host 127.0.0.1, "
            f"or say {INSECURE_FLAG}")
