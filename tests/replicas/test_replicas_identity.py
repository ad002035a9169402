"""Catalog identity: the token's hash by default, or a verified JWT's issuer, subject and scope."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from tests.replicas.conftest import AUDIENCE, Issuer
from toolsearch.identity import JwtIdentifier, TokenIdentifier
from toolsearch.mcp.caller import token_key
from toolsearch.testing import free_port


@pytest.fixture
async def identifier(issuer: Issuer) -> AsyncIterator[JwtIdentifier]:
    identifier = JwtIdentifier(issuer.jwks_url, issuer=issuer.url, audience=AUDIENCE, claims=["scope"])
    yield identifier
    await identifier.aclose()


def bearer(token: str) -> str:
    return f"Bearer {token}"


def unsigned(claims: dict) -> str:
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part(claims)}.signature"


async def test_a_refreshed_token_of_the_same_subject_and_scope_has_the_same_identity(
    identifier, issuer
) -> None:
    first = await identifier.identify(bearer(issuer.token("alice", "tools:read tools:write")))
    refreshed = await identifier.identify(bearer(issuer.token("alice", "tools:write tools:read")))
    assert first.key == refreshed.key
    assert first.key != token_key(bearer(issuer.token("alice", "tools:read tools:write")))


@pytest.mark.parametrize(
    ("subject", "scope"),
    [("bob", "tools:read tools:write"), ("alice", "tools:read")],
    ids=["subject", "scope"],
)
async def test_another_subject_or_scope_is_another_identity(identifier, issuer, subject, scope) -> None:
    alice = await identifier.identify(bearer(issuer.token("alice", "tools:read tools:write")))
    other = await identifier.identify(bearer(issuer.token(subject, scope)))
    assert alice.key != other.key


def _forged_with_another_key(issuer: Issuer) -> str:
    return Issuer(kid=issuer.kid).token("alice", "tools:read")


def _expired(issuer: Issuer) -> str:
    return issuer.token("alice", "tools:read", expires_in=-10)


def _other_audience(issuer: Issuer) -> str:
    return issuer.token("alice", "tools:read", aud="https://elsewhere.example")


def _other_issuer(issuer: Issuer) -> str:
    return issuer.token("alice", "tools:read", iss="https://evil.example")


def _hmac_with_the_public_key(issuer: Issuer) -> str:
    public_pem = issuer.key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    claims = jwt.decode(issuer.token("alice", "tools:read"), options={"verify_signature": False})
    return _encode_hs256(claims, public_pem, issuer.kid)


def _encode_hs256(claims: dict, secret: bytes, kid: str) -> str:
    """By hand: PyJWT itself refuses to use a public key as an HMAC secret, as a verifier must."""

    def part(value: bytes) -> str:
        return base64.urlsafe_b64encode(value).decode().rstrip("=")

    signing_input = (
        f"{part(json.dumps({'alg': 'HS256', 'kid': kid}).encode())}.{part(json.dumps(claims).encode())}"
    )
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{part(signature)}"


def _unsigned(issuer: Issuer) -> str:
    return unsigned(
        {"iss": issuer.url, "sub": "alice", "aud": AUDIENCE, "exp": time.time() + 60, "scope": "x"}
    )


UNVERIFIABLE = {
    "forged with another key": _forged_with_another_key,
    "expired": _expired,
    "for another audience": _other_audience,
    "from another issuer": _other_issuer,
    "HS256 keyed with the public key": _hmac_with_the_public_key,
    "unsigned (alg none)": _unsigned,
}


@pytest.mark.parametrize("kind", UNVERIFIABLE)
async def test_an_unverifiable_token_falls_back_to_its_hash(identifier, issuer, kind) -> None:
    token = UNVERIFIABLE[kind](issuer)
    identity = await identifier.identify(bearer(token))
    assert identity.key == token_key(bearer(token))
    assert identifier.unverified == 1


async def test_an_unreachable_jwks_falls_back_to_the_token_hash(issuer) -> None:
    identifier = JwtIdentifier(
        f"http://127.0.0.1:{free_port()}/jwks.json", issuer=issuer.url, audience=AUDIENCE
    )
    try:
        token = bearer(issuer.token("alice", "tools:read"))
        assert (await identifier.identify(token)).key == token_key(token)
    finally:
        await identifier.aclose()


async def test_a_rotated_signing_key_is_fetched_when_a_token_names_it(issuer) -> None:
    clock = [time.time()]
    identifier = JwtIdentifier(issuer.jwks_url, issuer=issuer.url, audience=AUDIENCE, clock=lambda: clock[0])
    try:
        before = await identifier.identify(bearer(issuer.token("alice", "tools:read")))
        issuer.kid, issuer.key = "key-2", Issuer().key
        clock[0] += 60  # past the minimum interval between two JWKS fetches
        after = await identifier.identify(bearer(issuer.token("alice", "tools:read")))
    finally:
        await identifier.aclose()
    assert before.key == after.key
    assert identifier.unverified == 0


async def test_token_mode_bounds_a_catalog_by_the_tokens_unverified_expiry() -> None:
    expiry = time.time() + 120
    identity = await TokenIdentifier().identify(bearer(unsigned({"sub": "alice", "exp": expiry})))
    assert identity.expires_at == pytest.approx(expiry)


@pytest.mark.parametrize(
    "authorization", [None, "Bearer opaque-token", "Basic dXNlcjpwYXNz", "Bearer a.%%%.c"]
)
async def test_token_mode_sets_no_bound_for_tokens_without_a_readable_expiry(authorization) -> None:
    identity = await TokenIdentifier().identify(authorization)
    assert identity.key == token_key(authorization)
    assert identity.expires_at is None
