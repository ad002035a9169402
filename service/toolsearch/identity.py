"""Who a caller is, as far as catalogs go: the key its catalog is cached under, and until when.

By default (`--catalog-identity token`) the key is the SHA-256 of the `Authorization` header, and a
catalog never outlives the token's `exp` when the token is a JWT (read without trusting it: it can
only shorten the catalog's life). With `--catalog-identity jwt` the bearer JWT is verified against
the issuer's JWKS, and the key is made of issuer, subject and the claims that decide which tools
the caller sees, so a refreshed OAuth token finds the catalog of the token it replaces. A token
that cannot be verified falls back to its hash: never to a claim nobody vouched for.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import httpx
import jwt
import orjson
from cachetools import TLRUCache

from toolsearch.mcp.caller import token_key

logger = logging.getLogger(__name__)

ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
"""Signatures accepted in jwt mode: public-key ones only (HS* with a public key would be forgeable)."""
_SET_CLAIMS: Final = frozenset({"scope", "scp"})
"""Claims whose value is a set (space-separated or a list): their order does not change identity."""
_MAX_VERIFIED: Final = 10_000
_JWKS_REFRESH_SECONDS: Final = 300.0
_JWKS_MIN_REFETCH_SECONDS: Final = 30.0
"""An unknown `kid` refetches the JWKS (key rotation), at most this often."""


@dataclass(frozen=True, slots=True)
class CallerIdentity:
    key: str
    """What the caller's catalog is stored under (a hex SHA-256)."""
    expires_at: float | None = None
    """Wall-clock seconds after which a catalog cached for this caller must not be served."""


class Identifier(Protocol):
    async def identify(self, authorization: str | None) -> CallerIdentity: ...

    async def aclose(self) -> None: ...


class TokenIdentifier:
    """Catalogs keyed by the token's hash, bounded by the token's `exp` when it is a JWT."""

    async def identify(self, authorization: str | None) -> CallerIdentity:
        return token_identity(authorization)

    async def aclose(self) -> None:
        return None


def token_identity(authorization: str | None) -> CallerIdentity:
    return CallerIdentity(token_key(authorization), _unverified_expiry(_bearer_token(authorization)))


class JwtIdentifier:
    """Catalogs keyed by a verified JWT's issuer, subject and visibility claims."""

    def __init__(
        self,
        jwks_url: str,
        *,
        issuer: str,
        audience: str,
        claims: Sequence[str] = ("scope",),
        http: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._jwks_url = jwks_url
        self._issuer = issuer
        self._audience = audience
        self._claims = tuple(claims)
        self._http = http or httpx.AsyncClient(timeout=httpx.Timeout(5.0), follow_redirects=False)
        self._owns_http = http is None
        self._clock = clock
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._fetch_lock = asyncio.Lock()
        # Verified identities by token key, each kept until its token's `exp`.
        self._verified: TLRUCache[str, tuple[CallerIdentity, float]] = TLRUCache(
            _MAX_VERIFIED, ttu=lambda _key, value, _now: value[1], timer=clock
        )
        self.unverified = 0
        """Bearer tokens that could not be verified and were keyed by their hash (a counter for metrics)."""

    async def identify(self, authorization: str | None) -> CallerIdentity:
        token = _bearer_token(authorization)
        if token is None:
            return token_identity(authorization)
        token_hash = token_key(authorization)
        cached = self._verified.get(token_hash)
        if cached is not None:
            return cached[0]
        try:
            claims = await self._verify(token)
        except (jwt.PyJWTError, _JwksUnavailable, KeyError, TypeError, ValueError) as exc:
            self.unverified += 1
            logger.debug("bearer token not verified (%s): catalog keyed by its hash", type(exc).__name__)
            return token_identity(authorization)
        identity = CallerIdentity(self._identity_key(claims))
        self._verified[token_hash] = (identity, float(claims["exp"]))
        return identity

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    def _identity_key(self, claims: dict[str, Any]) -> str:
        visible = {name: _canonical(name, claims.get(name)) for name in self._claims}
        material = orjson.dumps([claims["iss"], claims["sub"], visible], option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(b"jwt\n" + material).hexdigest()

    async def _verify(self, token: str) -> dict[str, Any]:
        header = jwt.get_unverified_header(token)
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise jwt.InvalidAlgorithmError(f"algorithm {algorithm!r} is not accepted")
        key = await self._key(header.get("kid"))
        return jwt.decode(
            token,
            key,
            algorithms=[algorithm],
            issuer=self._issuer,
            audience=self._audience,
            options={"require": ["exp", "iss", "sub", "aud"]},
        )

    async def _key(self, kid: str | None) -> jwt.PyJWK:
        now = self._clock()
        stale = self._fetched_at is None or now - self._fetched_at > _JWKS_REFRESH_SECONDS
        unknown = kid not in self._keys and (
            self._fetched_at is None or now - self._fetched_at > _JWKS_MIN_REFETCH_SECONDS
        )
        if stale or unknown:
            async with self._fetch_lock:
                if self._fetched_at is None or self._fetched_at < now:
                    await self._fetch_keys()
        key = self._keys.get(kid)
        if key is None and kid is None and len(self._keys) == 1:
            key = next(iter(self._keys.values()))
        if key is None:
            raise jwt.InvalidKeyError("no key of the issuer's JWKS matches the token's kid")
        return key

    async def _fetch_keys(self) -> None:
        self._fetched_at = self._clock()
        try:
            response = await self._http.get(self._jwks_url)
            response.raise_for_status()
            jwks = jwt.PyJWKSet.from_dict(response.json())
        except (httpx.HTTPError, ValueError, jwt.PyJWTError) as exc:
            if self._keys:
                logger.warning(
                    "JWKS refresh failed (%s); keeping the keys fetched before", type(exc).__name__
                )
                return
            logger.warning(
                "JWKS unavailable (%s): tokens are keyed by their hash until it answers", type(exc).__name__
            )
            raise _JwksUnavailable from exc
        self._keys = {key.key_id: key for key in jwks.keys}


class _JwksUnavailable(Exception):
    pass


def _bearer_token(authorization: str | None) -> str | None:
    if authorization is None:
        return None
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token.count(".") == 2 else None


def _unverified_expiry(token: str | None) -> float | None:
    """A JWT's `exp`, unverified: trusted only to shorten how long a catalog is kept."""
    if token is None:
        return None
    payload = token.split(".")[1]
    try:
        claims = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        return None
    expiry = claims.get("exp") if isinstance(claims, dict) else None
    return float(expiry) if isinstance(expiry, int | float) and not isinstance(expiry, bool) else None


def _canonical(name: str, value: Any) -> Any:
    if name in _SET_CLAIMS:
        if isinstance(value, str):
            return sorted(set(value.split()))
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return sorted(set(value))
    return value
