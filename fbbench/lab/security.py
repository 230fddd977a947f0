"""Who may talk to a lab. Dask runs whatever a client sends it, so a lab that listens beyond this
machine runs with mutual TLS or not at all.

- A scheduler binds to 127.0.0.1 unless told otherwise; for any other address fbbench requires
  TLS (``--tls DIR``) and refuses to start — before anything listens — unless ``--insecure`` is
  given, which is printed in red and recorded with every run the lab makes.
- ``fbbench lab init DIR`` makes a lab's certificate authority and one certificate per role
  (scheduler, worker, client), each signed by it; Dask's TLS then has every side prove it holds
  a certificate of this CA (``ssl.CERT_REQUIRED`` both ways), so a worker or client of another
  CA cannot join. The CA's own key stays in DIR (mode 0600); copy DIR without ``ca-key.pem``
  to the lab's other machines.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fbbench.errors import FbbenchError
from fbbench.lab import DEFAULT_PORT

ROLES = ("scheduler", "worker", "client")
CA_CERT, CA_KEY = "ca.pem", "ca-key.pem"
VALID_DAYS = 825


def _files(role: str) -> tuple[str, str]:
    return f"{role}.pem", f"{role}-key.pem"


def init_lab(directory: Path, name: str = "fbbench lab") -> list[Path]:
    """A new CA and a certificate per role in ``directory`` (which must not hold a lab already)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    target = directory.expanduser()
    if (target / CA_CERT).exists():
        raise FbbenchError(f"{target} already holds a lab's certificates ({CA_CERT})",
                           hint="give another directory; a new CA would lock out every host of the old one")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise FbbenchError(f"cannot create {target}: {error.strerror or error}") from None
    now = datetime.datetime.now(datetime.UTC)

    def key_bytes(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} CA")])
    ca_cert = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
               .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                            key_encipherment=False, data_encipherment=False, key_agreement=False,
                                            key_cert_sign=True, crl_sign=True, encipher_only=False,
                                            decipher_only=False), critical=True)
               .sign(ca_key, hashes.SHA256()))
    written = [_write(target / CA_CERT, ca_cert.public_bytes(serialization.Encoding.PEM), 0o644),
               _write(target / CA_KEY, key_bytes(ca_key), 0o600)]
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} {role}")]))
                .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        cert_file, key_file = _files(role)
        written += [_write(target / cert_file, cert.public_bytes(serialization.Encoding.PEM), 0o644),
                    _write(target / key_file, key_bytes(key), 0o600)]
    return written


def _write(path: Path, data: bytes, mode: int) -> Path:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    return path


def security(directory: Path | None, role: str) -> Any:
    """Dask's Security for ``role`` from a lab directory (None: no TLS)."""
    from distributed.security import Security

    if directory is None:
        return Security()
    target = directory.expanduser()
    cert, key = (target / name for name in _files(role))
    missing = [path for path in (target / CA_CERT, cert, key) if not path.is_file()]
    if missing:
        raise FbbenchError(f"--tls {directory}: no {', '.join(p.name for p in missing)} there",
                           hint="fbbench lab init DIR makes a lab's certificates; copy DIR to every host")
    files = {"tls_ca_file": str(target / CA_CERT), f"tls_{role}_cert": str(cert), f"tls_{role}_key": str(key)}
    return Security(require_encryption=True, **files)


def host_of(address: str) -> str:
    """The host part of a Dask address (``tcp://10.0.0.5:8786``, ``tls://…``, ``10.0.0.5:8786``)."""
    parsed = urlsplit(address if "://" in address else f"tcp://{address}")
    if not parsed.hostname:
        raise FbbenchError(f"'{address}' is not a scheduler address", hint="e.g. tcp://127.0.0.1:8786")
    return parsed.hostname


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is this machine's loopback (a name is resolved)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        return all(ipaddress.ip_address(info[4][0]).is_loopback for info in socket.getaddrinfo(host, None))
    except (OSError, ValueError):
        return False


def address(text: str, tls: Path | None) -> str:
    """A scheduler address with the scheme that ``--tls`` asks for (and Dask's port when none is
    given); a tls:// address without certificates, or certificates with tcp://, is refused."""
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = ("tls" if tls is not None else "tcp"), text
    if scheme not in ("tcp", "tls"):
        raise FbbenchError(f"'{text}': a lab's address is tcp://HOST:PORT or tls://HOST:PORT")
    if scheme == "tls" and tls is None:
        raise FbbenchError(f"'{text}' is a TLS address: give the lab's certificates with --tls DIR")
    if scheme == "tcp" and tls is not None:
        raise FbbenchError(f"'{text}' is a plain TCP address, but --tls was given", hint=f"use tls://{rest}")
    if ":" not in rest.rsplit("]", 1)[-1]:
        rest = f"{rest}:{DEFAULT_PORT}"
    host_of(f"{scheme}://{rest}")
    return f"{scheme}://{rest}"


def check_exposure(host: str, tls: Path | None, insecure: bool, what: str) -> bool:
    """Refuse a lab beyond loopback without TLS unless ``insecure``: returns whether the lab is
    insecure (no TLS off loopback), which the caller says in red and records with every run."""
    if tls is not None or is_loopback(host):
        return False
    if not insecure:
        raise FbbenchError(f"{what} on {host} without TLS: anyone who reaches it can run any code on the lab's "
                           "hosts (Dask runs whatever a client sends)",
                           hint="make certificates with fbbench lab init DIR and give --tls DIR to the scheduler, "
                                "the workers and the sweep; or --insecure on a network you trust")
    return True


INSECURE_WARNING = ("[bold red]insecure lab:[/] no TLS beyond loopback (--insecure): anyone who reaches it can "
                    "run any code on its hosts; this is recorded with every run it makes")
