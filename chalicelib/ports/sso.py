"""Single sign-on (contract 7f): what the SSO service needs from an OpenID provider,
whoever speaks HTTP to it (adapters/oidc.py: Authlib's OAuth 2.0 client).

The service keeps every rule (state, nonce, the proof key of RFC 7636, the ID token's signature and
claims, verified email); a provider only builds the authorization URL, exchanges a
code for tokens and publishes its metadata and keys."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Protocol


class ProviderUnavailable(Exception):
    """The provider did not answer usefully (network, timeout, a malformed document)."""


class ProviderRefused(Exception):
    """The provider refused the exchange (an OAuth error answer: a bad or reused code...)."""


@dataclass(frozen=True)
class TokenAnswer:
    """What the token endpoint answered for a code: the ID token (a JWT, unverified) and the
    access token it may be bound to (`at_hash`)."""
    id_token: Optional[str]
    access_token: Optional[str] = None


class IdentityProvider(Protocol):
    client_id: str

    def issuer(self) -> str:
        """The `issuer` of the provider's discovery document (checked against the configured one)."""

    def signing_algorithms(self) -> Optional[list[str]]:
        """`id_token_signing_alg_values_supported`, when published."""

    def key_set(self, refresh: bool = False) -> dict[str, object]:
        """The provider's published keys (a JWK Set), fetched again when `refresh`."""

    def authorization_url(self, redirect_uri: str, state: str, nonce: str, code_verifier: str) -> str:
        """Where the browser goes to sign in: the authorization code flow with a proof key (RFC 7636, S256)."""

    def exchange(self, code: str, redirect_uri: str, code_verifier: str) -> TokenAnswer:
        """The token endpoint's answer for `code`; ProviderRefused, ProviderUnavailable."""
