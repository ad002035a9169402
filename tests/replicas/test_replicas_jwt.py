"""Replicas with `--catalog-identity jwt` share one catalog per verified identity; in the default token
mode a catalog never outlives its token."""

from __future__ import annotations

import asyncio
import time

import jwt

from tests.replicas.conftest import AUDIENCE, Issuer, running_replicas, search


def jwt_flags(issuer: Issuer) -> dict[str, str]:
    return {
        "catalog_identity": "jwt",
        "jwt_jwks_url": issuer.jwks_url,
        "jwt_issuer": issuer.url,
        "jwt_audience": AUDIENCE,
    }


async def test_a_refreshed_token_keeps_its_catalog_across_replicas(redis_server, upstream, issuer) -> None:
    url, served = upstream
    first = issuer.token("alice", "tools:read")
    refreshed = [issuer.token("alice", "tools:read") for _ in range(2)]
    with running_replicas(url, redis_url=redis_server.url, **jwt_flags(issuer)) as replicas:
        answer = await search(replicas[0], first, "current time")
        answers = [
            await search(replica, token, "current time")
            for replica, token in zip(replicas[1:], refreshed, strict=True)
        ]
    assert served.list_calls[f"Bearer {first}"] == 1
    assert all(served.list_calls[f"Bearer {token}"] == 0 for token in refreshed)
    assert all(other == answer for other in answers)


async def test_another_scope_or_an_unverifiable_token_gets_a_catalog_of_its_own(
    redis_server, upstream, issuer
) -> None:
    url, served = upstream
    alice = issuer.token("alice", "tools:read")
    other_scope = issuer.token("alice", "tools:admin")
    forged = Issuer(kid=issuer.kid).token("alice", "tools:read")
    with running_replicas(url, count=2, redis_url=redis_server.url, **jwt_flags(issuer)) as replicas:
        for token in (alice, other_scope, forged):
            for replica in replicas:
                await search(replica, token, "current time")
    assert [served.list_calls[f"Bearer {token}"] for token in (alice, other_scope, forged)] == [1, 1, 1]
    with redis_server.client() as client:
        assert len(client.keys("toolsearch:catalog:*")) == 3


async def test_in_token_mode_a_catalog_is_not_served_past_its_tokens_expiry(
    redis_server, upstream, issuer
) -> None:
    url, served = upstream
    with running_replicas(url, count=2, redis_url=redis_server.url) as replicas:
        token = issuer.token("alice", "tools:read", expires_in=5)
        expires_at = jwt_expiry(token)
        await search(replicas[0], token, "current time")
        await search(replicas[1], token, "current time")
        with redis_server.client() as client:
            (key,) = client.keys("toolsearch:catalog:*")
            assert 0 < client.pttl(key) <= 5000
        listed_before_expiry = served.list_calls[f"Bearer {token}"]
        await asyncio.sleep(max(0.0, expires_at - time.time() + 0.1))
        await search(replicas[1], token, "current time")  # the upstream decides: this one still accepts it
    assert listed_before_expiry == 1
    assert served.list_calls[f"Bearer {token}"] > 1


def jwt_expiry(token: str) -> float:
    return float(jwt.decode(token, options={"verify_signature": False})["exp"])
