"""The webhook's TLS: a self-signed certificate made at start-up, and publishing it as the CA bundle.

The API server calls the webhook over HTTPS and trusts the `caBundle` of the webhook configuration.
In the chart's default mode the operator makes its own certificate on every start and writes it into
that bundle; with cert-manager the certificate is mounted and cert-manager's CA injector fills it.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


class CertificateFiles(NamedTuple):
    certfile: Path
    keyfile: Path
    ca_bundle: str | None
    """Base64 of the PEM the API server must trust, when this process is the one to publish it."""


def self_signed_certificate(
    hostnames: Sequence[str], *, valid_for: datetime.timedelta = datetime.timedelta(days=3650)
) -> tuple[bytes, bytes]:
    """A PEM certificate and PKCS#8 key for `hostnames` (DNS names or IP addresses), its own CA."""
    if not hostnames:
        raise ValueError("a certificate needs at least one hostname")
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostnames[0][:64])])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # tolerate API servers' clock skew
        .not_valid_after(now + valid_for)
        .add_extension(x509.SubjectAlternativeName([_general_name(name) for name in hostnames]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def write_self_signed(directory: Path, hostnames: Sequence[str]) -> CertificateFiles:
    """Make a certificate for `hostnames` and write it under `directory`, readable by this user only."""
    certificate, key = self_signed_certificate(hostnames)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    certfile, keyfile = directory / "tls.crt", directory / "tls.key"
    keyfile.touch(mode=0o600)
    keyfile.write_bytes(key)
    certfile.write_bytes(certificate)
    return CertificateFiles(certfile, keyfile, base64.b64encode(certificate).decode("ascii"))


def mounted_certificate(directory: Path) -> CertificateFiles:
    """The `tls.crt`/`tls.key` pair of a mounted Secret (cert-manager publishes its CA itself)."""
    certfile, keyfile = directory / "tls.crt", directory / "tls.key"
    for path in (certfile, keyfile):
        if not path.is_file():
            raise FileNotFoundError(f"the webhook certificate {path} is not mounted")
    return CertificateFiles(certfile, keyfile, None)


def webhooks_with_ca_bundle(
    webhooks: Sequence[Mapping[str, Any]], ca_bundle: str
) -> list[dict[str, Any]] | None:
    """`webhooks` with every client config trusting `ca_bundle`; None when all of them already do."""
    if all((webhook.get("clientConfig") or {}).get("caBundle") == ca_bundle for webhook in webhooks):
        return None
    return [
        {**webhook, "clientConfig": {**(webhook.get("clientConfig") or {}), "caBundle": ca_bundle}}
        for webhook in webhooks
    ]


def _general_name(hostname: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(hostname))
    except ValueError:
        return x509.DNSName(hostname)
