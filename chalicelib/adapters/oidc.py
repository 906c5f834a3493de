"""An OpenID provider over HTTP (ports/sso.py), with Authlib's OAuth 2.0 client
(`authlib.integrations.httpx_client.OAuth2Client`): the authorization URL with PKCE
S256 and the code exchange (client_secret_basic). The discovery document and the
key set are read once per process and kept (the key set is fetched again when a
token names a key it does not hold: the provider rotated its keys).

The client secret comes from DOCPUB_OIDC_CLIENT_SECRET, or (deployed) from the SSM
Parameter Store SecureString named by DOCPUB_OIDC_CLIENT_SECRET_PARAMETER, read on
first use and decrypted."""
from __future__ import annotations

import threading
from typing import Any, Optional

from chalicelib import config
from chalicelib.ports.sso import ProviderRefused, ProviderUnavailable, TokenAnswer

TIMEOUT_SECONDS = 5.0
SCOPE = "openid email profile"
_SECRETS: dict[str, str] = {}
_LOCK = threading.Lock()


def client_secret() -> str:
    """The client secret: given directly, or read (once per process) from SSM."""
    direct = config.oidc_client_secret()
    if direct:
        return direct
    name = config.oidc_client_secret_parameter()
    if not name:
        return ""
    with _LOCK:
        if name not in _SECRETS:
            from chalicelib.adapters.aws import clients

            answer = clients.ssm().get_parameter(Name=name, WithDecryption=True)
            _SECRETS[name] = answer["Parameter"]["Value"]
        return _SECRETS[name]


class AuthlibProvider:
    """The configured provider (config.oidc_*)."""

    def __init__(self, issuer: str, client_id: str):
        self.configured_issuer = issuer
        self.client_id = client_id
        self._metadata: Optional[dict[str, Any]] = None
        self._keys: Optional[dict[str, Any]] = None

    # ---------------------------------------------------------------- documents

    def _get_json(self, url: str) -> dict[str, Any]:
        import httpx2

        try:
            answer = httpx2.get(url, timeout=TIMEOUT_SECONDS, follow_redirects=False)
            answer.raise_for_status()
            document = answer.json()
        except (httpx2.HTTPError, ValueError) as exc:
            raise ProviderUnavailable(f"{type(exc).__name__} reading {url}") from exc
        if not isinstance(document, dict):
            raise ProviderUnavailable(f"{url} is not a JSON object")
        return document

    def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            self._metadata = self._get_json(self.configured_issuer.rstrip("/") + "/.well-known/openid-configuration")
        return self._metadata

    def _endpoint(self, name: str) -> str:
        value = self.metadata().get(name)
        if not isinstance(value, str) or not value.startswith(("https://", "http://")):
            raise ProviderUnavailable(f"the discovery document has no {name}")
        return value

    def issuer(self) -> str:
        return str(self.metadata().get("issuer") or "")

    def signing_algorithms(self) -> Optional[list[str]]:
        algs = self.metadata().get("id_token_signing_alg_values_supported")
        return [a for a in algs if isinstance(a, str)] if isinstance(algs, list) else None

    def key_set(self, refresh: bool = False) -> dict[str, object]:
        if self._keys is None or refresh:
            self._keys = self._get_json(self._endpoint("jwks_uri"))
        return self._keys

    # ---------------------------------------------------------------- the code flow

    def _client(self, redirect_uri: str):
        from authlib.integrations.httpx_client import OAuth2Client

        return OAuth2Client(client_id=self.client_id, client_secret=client_secret(), scope=SCOPE,
                            redirect_uri=redirect_uri, code_challenge_method="S256", timeout=TIMEOUT_SECONDS,
                            token_endpoint_auth_method="client_secret_basic")

    def authorization_url(self, redirect_uri: str, state: str, nonce: str, code_verifier: str) -> str:
        with self._client(redirect_uri) as client:
            url, _state = client.create_authorization_url(self._endpoint("authorization_endpoint"), state=state,
                                                          code_verifier=code_verifier, nonce=nonce)
        return str(url)

    def exchange(self, code: str, redirect_uri: str, code_verifier: str) -> TokenAnswer:
        import httpx2
        from authlib.integrations.base_client import OAuthError

        try:
            with self._client(redirect_uri) as client:
                token = client.fetch_token(self._endpoint("token_endpoint"), grant_type="authorization_code",
                                           code=code, code_verifier=code_verifier)
        except OAuthError as exc:
            raise ProviderRefused(exc.error or "refused") from exc
        except (httpx2.HTTPError, ValueError) as exc:
            raise ProviderUnavailable(type(exc).__name__) from exc
        id_token, access_token = token.get("id_token"), token.get("access_token")
        return TokenAnswer(id_token if isinstance(id_token, str) else None,
                           access_token if isinstance(access_token, str) else None)


_PROVIDERS: dict[tuple[str, str], AuthlibProvider] = {}


def configured_provider() -> Optional[AuthlibProvider]:
    """The provider of this deployment (one per process), or None when SSO is not configured."""
    if not config.sso_enabled():
        return None
    key = (config.oidc_issuer(), config.oidc_client_id())
    with _LOCK:
        if key not in _PROVIDERS:
            _PROVIDERS[key] = AuthlibProvider(*key)
        return _PROVIDERS[key]
