"""Single sign-on's ID token rules (contract 7f), at the service level: the SSO service
runs as it does in the app (state, nonce, PKCE, the token's signature and claims); the
provider (the port) is a stand-in that answers with tokens these tests sign, with the
provider's key, another key, another audience, a stale `exp`, another sign-in's nonce.
None of them signs anyone in. The happy path through a real provider is tests/http/test_sso.py."""
from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from chalicelib.errors import Unauthorized

ISSUER = "https://id.example.test"
CLIENT_ID = "docpub-client"


@pytest.fixture(scope="module")
def keys():
    from joserfc.jwk import RSAKey

    return {"provider": RSAKey.generate_key(2048, parameters={"kid": "k1", "use": "sig", "alg": "RS256"}),
            "stranger": RSAKey.generate_key(2048, parameters={"kid": "k1", "use": "sig", "alg": "RS256"})}


class StandIn:
    """The provider port, answering with whatever token the test hands it."""

    def __init__(self, published):
        self.client_id = CLIENT_ID
        self.published = published
        self.token: dict[str, Any] = {}
        self.nonces: list[str] = []
        self.challenges: list[str] = []

    def issuer(self) -> str:
        return ISSUER

    def signing_algorithms(self):
        return ["RS256"]

    def key_set(self, refresh: bool = False):
        from joserfc.jwk import KeySet

        return KeySet([self.published]).as_dict(private=False)

    def authorization_url(self, redirect_uri, state, nonce, code_verifier) -> str:
        from authlib.oauth2.rfc7636 import create_s256_code_challenge

        self.nonces.append(nonce)
        self.challenges.append(create_s256_code_challenge(code_verifier))
        return f"{ISSUER}/auth?state={state}&nonce={nonce}"

    def exchange(self, code, redirect_uri, code_verifier):
        from authlib.oauth2.rfc7636 import create_s256_code_challenge

        from chalicelib.ports.sso import TokenAnswer

        assert create_s256_code_challenge(code_verifier) == self.challenges[-1]  # PKCE: the verifier of this sign-in
        return TokenAnswer(self.token.get("id_token"), self.token.get("access_token"))


@pytest.fixture
def sso(ctx, keys, monkeypatch):
    from chalicelib.services.sso import SsoService

    monkeypatch.setenv("DOCPUB_OIDC_ISSUER", ISSUER)
    monkeypatch.setenv("DOCPUB_OIDC_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("DOCPUB_OIDC_CLIENT_SECRET", "s" * 32)
    return SsoService(ctx, StandIn(keys["provider"]))


def _sign(key, claims: dict, alg: str = "RS256", kid: str = "k1") -> str:
    from joserfc import jwt

    return jwt.encode({"alg": alg, "kid": kid}, claims, key)


def _b64(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _part(value: dict) -> str:
    import json

    return _b64(json.dumps(value).encode())


def _claims(ctx, nonce: str, **changes) -> dict:
    now = int(ctx.clock())
    claims = {"iss": ISSUER, "sub": "ada-1", "aud": CLIENT_ID, "iat": now, "exp": now + 300, "nonce": nonce,
              "email": "Ada@Example.com", "email_verified": True, "name": "Ada"}
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def _begin(sso) -> str:
    started = sso.begin("203.0.113.7")
    query = parse_qs(urlsplit(started.url).query)
    assert query["state"] == [started.state] and query["nonce"] == [sso.provider.nonces[-1]]
    return started.state


def _finish(sso, state: str, token: str):
    sso.provider.token = {"access_token": "at", "token_type": "Bearer", "id_token": token}
    return sso.finish(state, state, "the-code")


def test_a_token_the_provider_signed_for_this_sign_in_signs_in(ctx, sso, keys):
    state = _begin(sso)
    started = _finish(sso, state, _sign(keys["provider"], _claims(ctx, sso.provider.nonces[-1])))
    assert started.session.email == "ada@example.com" and started.session.sso_domain == "@example.com"
    stored = ctx.sessions.get(started.session.session_hash)
    assert stored is not None and stored.sso_domain == "@example.com"
    user = ctx.users.get("ada@example.com")
    assert user is not None and user.email_verified_ms  # a new account, its email confirmed by the provider


@pytest.mark.parametrize("case", ["bad signature", "unknown key", "wrong audience", "stale exp", "wrong issuer",
                                  "no nonce", "alg none", "HS256 with the public key"])
def test_a_bad_id_token_signs_no_one_in(ctx, sso, keys, case):
    state = _begin(sso)
    nonce = sso.provider.nonces[-1]
    key, claims, alg, kid = keys["provider"], _claims(ctx, nonce), "RS256", "k1"
    if case == "bad signature":
        key = keys["stranger"]  # another key, claiming the provider's key id
    elif case == "unknown key":
        key, kid = keys["stranger"], "k2"
    elif case == "wrong audience":
        claims["aud"] = "someone-else"
    elif case == "stale exp":
        claims.update(iat=claims["iat"] - 3600, exp=claims["iat"] - 120)  # past the 60 s leeway
    elif case == "wrong issuer":
        claims["iss"] = "https://evil.example.test"
    elif case == "no nonce":
        del claims["nonce"]
    if case == "alg none":
        token = f"{_part({'alg': 'none', 'kid': 'k1'})}.{_part(claims)}."
    elif case == "HS256 with the public key":  # the old confusion: the public key as an HMAC secret
        import hashlib
        import hmac

        signed = f"{_part({'alg': 'HS256', 'kid': 'k1'})}.{_part(claims)}"
        mac = hmac.new(keys["provider"].as_pem(private=False), signed.encode(), hashlib.sha256).digest()
        token = f"{signed}.{_b64(mac)}"
    else:
        token = _sign(key, claims, alg, kid)
    with pytest.raises(Unauthorized) as refused:
        _finish(sso, state, token)
    assert "Single sign-on did not complete" in refused.value.message
    reason = {"wrong audience": "(aud)", "stale exp": "(exp)", "wrong issuer": "(iss)", "no nonce": "(nonce)"}
    assert reason.get(case, "signature is not the provider's") in refused.value.message
    assert ctx.users.get("ada@example.com") is None


def test_a_replayed_nonce_signs_no_one_in(ctx, sso, keys):
    first = _begin(sso)
    token = _sign(keys["provider"], _claims(ctx, sso.provider.nonces[-1]))
    _finish(sso, first, token)
    # The same callback again: its state is spent.
    with pytest.raises(Unauthorized, match="already used"):
        _finish(sso, first, token)
    # The same ID token in a new sign-in: its nonce is the first sign-in's, not this one's.
    second = _begin(sso)
    with pytest.raises(Unauthorized, match="nonce"):
        _finish(sso, second, token)


def test_state_must_be_this_browsers_and_unexpired(ctx, sso, keys):
    state = _begin(sso)
    token = _sign(keys["provider"], _claims(ctx, sso.provider.nonces[-1]))
    sso.provider.token = {"id_token": token}
    other = _begin(sso)
    with pytest.raises(Unauthorized, match="not started in this browser"):
        sso.finish(state, other, "code")  # the cookie holds another sign-in's state
    with pytest.raises(Unauthorized, match="not started in this browser"):
        sso.finish(state, None, "code")
    ctx.clock.advance(601)  # the state lives 10 minutes
    with pytest.raises(Unauthorized, match="already used or has expired"):
        sso.finish(state, state, "code")


@pytest.mark.parametrize("verified", [False, None, "true"])
def test_an_email_the_provider_has_not_verified_is_refused(ctx, sso, keys, verified):
    state = _begin(sso)
    claims = _claims(ctx, sso.provider.nonces[-1], email_verified=verified)
    with pytest.raises(Unauthorized, match="not verified"):
        _finish(sso, state, _sign(keys["provider"], claims))
    assert ctx.users.get("ada@example.com") is None


def test_an_unconfirmed_password_account_loses_its_password_to_the_owner_of_the_address(ctx, sso, keys):
    from chalicelib.services.accounts import AccountService

    accounts = AccountService(ctx)
    accounts.sign_up("ada@example.com", "a squatter's long passphrase", "Squat", "203.0.113.9")
    squatted = ctx.users.get("ada@example.com")
    assert squatted is not None and not squatted.email_verified_ms
    state = _begin(sso)
    started = _finish(sso, state, _sign(keys["provider"], _claims(ctx, sso.provider.nonces[-1])))
    assert started.session.email == "ada@example.com"
    owned = ctx.users.get("ada@example.com")
    assert owned is not None and owned.email_verified_ms and owned.password_hash != squatted.password_hash
    with pytest.raises(Unauthorized):
        accounts.sign_in("ada@example.com", "a squatter's long passphrase", "203.0.113.9")
