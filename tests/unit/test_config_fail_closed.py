"""Deployed, the signing key must be a real secret: a short one is as forgeable as none."""
from __future__ import annotations

import pytest


@pytest.mark.parametrize("value", ["secret", "k" * 31])
def test_a_short_secret_key_is_refused_when_deployed(monkeypatch, value):
    from chalicelib import config

    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "docpub-prod")
    monkeypatch.setenv("DOCPUB_SECRET_KEY", value)
    with pytest.raises(config.ConfigurationError, match="at least 32"):
        config.secret_key()


def test_a_long_secret_key_is_used_when_deployed_and_any_key_locally(monkeypatch):
    from chalicelib import config

    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "docpub-prod")
    monkeypatch.setenv("DOCPUB_SECRET_KEY", "k" * 32)
    assert config.secret_key() == "k" * 32
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME")
    monkeypatch.setenv("DOCPUB_SECRET_KEY", "short")
    assert config.secret_key() == "short"  # tests and the local stack may use anything
