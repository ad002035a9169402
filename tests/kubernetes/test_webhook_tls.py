"""The webhook's self-signed certificate and its publication as the CA bundle."""

from __future__ import annotations

import base64
import ipaddress
import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from toolsearch_operator.tls import (
    mounted_certificate,
    self_signed_certificate,
    webhooks_with_ca_bundle,
    write_self_signed,
)

HOSTNAMES = ["toolsearch-webhook", "toolsearch-webhook.toolsearch.svc", "127.0.0.1"]


def test_the_certificate_names_every_host_and_address() -> None:
    certificate, _ = self_signed_certificate(HOSTNAMES)

    names = x509.load_pem_x509_certificate(certificate).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert names.value.get_values_for_type(x509.DNSName) == HOSTNAMES[:2]
    assert names.value.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]


def test_the_certificate_is_its_own_trust_anchor() -> None:
    certificate = x509.load_pem_x509_certificate(self_signed_certificate(HOSTNAMES)[0])

    assert certificate.issuer == certificate.subject
    assert certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    client = ssl.create_default_context(cadata=certificate.public_bytes(serialization.Encoding.PEM).decode())
    assert client.get_ca_certs()[0]["subject"] == ((("commonName", "toolsearch-webhook"),),)


def test_the_written_key_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    files = write_self_signed(tmp_path / "tls", HOSTNAMES)

    assert stat.S_IMODE(files.keyfile.stat().st_mode) == 0o600
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(files.certfile, files.keyfile)
    assert files.ca_bundle is not None
    assert base64.b64decode(files.ca_bundle) == files.certfile.read_bytes()


def test_a_mounted_certificate_is_served_without_publishing_a_bundle(tmp_path: Path) -> None:
    write_self_signed(tmp_path, HOSTNAMES)

    files = mounted_certificate(tmp_path)

    assert files.ca_bundle is None
    assert files.certfile == tmp_path / "tls.crt"


def test_a_missing_mounted_certificate_says_which_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"tls\.crt"):
        mounted_certificate(tmp_path)


def test_every_webhook_gets_the_ca_bundle_and_keeps_its_service() -> None:
    webhooks = [
        {
            "name": "sidecar.toolsearch.dev",
            "clientConfig": {"service": {"name": "webhook", "namespace": "ts"}},
        },
        {"name": "other.toolsearch.dev", "clientConfig": {"caBundle": "old"}},
    ]

    updated = webhooks_with_ca_bundle(webhooks, "bmV3")

    assert updated == [
        {
            "name": "sidecar.toolsearch.dev",
            "clientConfig": {"service": {"name": "webhook", "namespace": "ts"}, "caBundle": "bmV3"},
        },
        {"name": "other.toolsearch.dev", "clientConfig": {"caBundle": "bmV3"}},
    ]


def test_a_current_ca_bundle_needs_no_patch() -> None:
    assert (
        webhooks_with_ca_bundle([{"name": "sidecar.toolsearch.dev", "clientConfig": {"caBundle": "x"}}], "x")
        is None
    )
