"""Deployed single sign-on (contract 7f): the client secret comes from an SSM Parameter
Store SecureString, decrypted, read once per process; the environment names the parameter,
never the secret (tests/e2e/test_infra.py checks the stack gives it that and nothing more)."""
from __future__ import annotations

import pytest


@pytest.fixture
def ssm_secret(aws, monkeypatch):
    from chalicelib.adapters import oidc
    from chalicelib.adapters.aws import clients

    name = "/docpub-test/oidc-client-secret"
    clients.ssm().put_parameter(Name=name, Value="s3cr3t-from-ssm", Type="SecureString")
    for variable in ("DOCPUB_OIDC_CLIENT_SECRET",):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("DOCPUB_OIDC_ISSUER", "https://id.example.test")
    monkeypatch.setenv("DOCPUB_OIDC_CLIENT_ID", "docpub")
    monkeypatch.setenv("DOCPUB_OIDC_CLIENT_SECRET_PARAMETER", name)
    monkeypatch.setattr(oidc, "_SECRETS", {})
    return name


def test_the_secret_is_read_from_a_securestring_once(ssm_secret, monkeypatch):
    from chalicelib import config
    from chalicelib.adapters import oidc
    from chalicelib.adapters.aws import clients

    assert config.sso_enabled()  # the parameter stands in for the secret
    calls = []
    real = clients.ssm().get_parameter

    def counted(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(clients.ssm(), "get_parameter", counted)
    assert oidc.client_secret() == "s3cr3t-from-ssm"
    assert oidc.client_secret() == "s3cr3t-from-ssm"
    assert calls == [{"Name": ssm_secret, "WithDecryption": True}]


def test_a_secret_given_directly_wins_and_nothing_means_no_sso(ssm_secret, monkeypatch):
    from chalicelib import config
    from chalicelib.adapters import oidc

    monkeypatch.setenv("DOCPUB_OIDC_CLIENT_SECRET", "given")
    assert oidc.client_secret() == "given"
    monkeypatch.delenv("DOCPUB_OIDC_CLIENT_SECRET")
    monkeypatch.delenv("DOCPUB_OIDC_CLIENT_SECRET_PARAMETER")
    assert not config.sso_enabled() and oidc.configured_provider() is None
