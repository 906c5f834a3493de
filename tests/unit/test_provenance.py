"""Signed versions (contract 7g) on the services: one byte changed in the content, the
statement or the signature is refused and named; a rotated key still verifies what it
signed; the local key file is 0600; the KMS signer (moto) signs raw r||s that verifies."""
from __future__ import annotations

import json
import os
import stat

import pytest

from chalicelib.domain import provenance as rules


@pytest.fixture
def signed_version(services, ctx, workspace):
    """(provenance, keys, content) of a published version."""
    from chalicelib.models import PublishRequest
    from chalicelib.services import provenance
    from chalicelib.services.auth import credentials_from_key as Credentials

    _, key = workspace
    result = services.documents.publish(Credentials(key), PublishRequest(title="T", html="<p>signed bytes</p>"))
    doc = ctx.documents.get(result.response.document_id)
    version = ctx.documents.get_version(doc.document_id, 1)
    answer = provenance.provenance_for(ctx, doc, version)
    return answer.model_dump(mode="json"), provenance.key_set(ctx).model_dump(), b"<p>signed bytes</p>"


def _flip(text: str, at: int) -> str:
    """One character of `text` changed (to another character of the same alphabet)."""
    swapped = "B" if text[at] != "B" else "C"
    return text[:at] + swapped + text[at + 1:]


def test_an_untouched_version_verifies(signed_version):
    answer, keys, content = signed_version
    verdict = rules.verify(answer, keys, content)
    assert verdict.valid, verdict.failures


def test_one_byte_of_content_changed_fails_the_content(signed_version):
    answer, keys, content = signed_version
    verdict = rules.verify(answer, keys, content.replace(b"signed", b"signeD"))
    assert [part for part, _ in verdict.failures] == ["content"]


def test_one_byte_of_the_statement_changed_fails_the_statement(signed_version):
    answer, keys, content = signed_version
    at = answer["statement"]["published_at"]  # one digit of the seconds: still a well-formed statement
    answer["statement"]["published_at"] = at[:-2] + ("1" if at[-2] != "1" else "2") + "Z"
    verdict = rules.verify(answer, keys, content)
    assert [part for part, _ in verdict.failures] == ["statement"]
    assert "changed after it was signed" in verdict.failures[0][1]


def test_one_byte_of_the_signature_changed_fails_the_signature(signed_version):
    answer, keys, content = signed_version
    answer["signature"]["value"] = _flip(answer["signature"]["value"], 10)
    verdict = rules.verify(answer, keys, content)
    assert [part for part, _ in verdict.failures] == ["signature"]
    assert "does not verify" in verdict.failures[0][1]


def test_a_signature_of_another_length_or_key_is_a_signature_failure(signed_version):
    answer, keys, content = signed_version
    short = json.loads(json.dumps(answer))
    short["signature"]["value"] = short["signature"]["value"][:-4]
    assert [p for p, _ in rules.verify(short, keys, content).failures] == ["signature"]
    unknown = json.loads(json.dumps(answer))
    unknown["signature"]["kid"] = "nope"
    assert [p for p, _ in rules.verify(unknown, keys, content).failures] == ["signature"]


def test_rotation_keeps_old_versions_verifiable(services, ctx, workspace, clock, tmp_path):
    """Rotate with the local key file: the old key stays listed with not_after, old versions
    verify with it, new ones are signed by the new key."""
    from chalicelib.adapters.signing import LocalSigners
    from chalicelib.models import PublishRequest
    from chalicelib.services import provenance
    from chalicelib.services.auth import credentials_from_key as Credentials

    signers = LocalSigners(str(tmp_path / "data"))
    ctx.signers_factory = lambda: signers
    ctx.__dict__.pop("signers", None)
    _, key = workspace
    first = services.documents.publish(Credentials(key), PublishRequest(title="T", html="<p>before</p>"))
    document_id = first.response.document_id
    mode = stat.S_IMODE(os.stat(tmp_path / "data" / "signing-key.pem").st_mode)
    assert mode == 0o600
    old_kid = signers.current().public_jwk()["kid"]
    clock.advance(60)
    rotated = provenance.rotate(ctx)
    assert rotated["retired"] == [old_kid] and rotated["kid"] != old_kid
    assert stat.S_IMODE(os.stat(tmp_path / "data" / "signing-key.pem").st_mode) == 0o600
    clock.advance(60)
    services.documents.publish(Credentials(key), PublishRequest(title="T", html="<p>after</p>",
                                                                document_id=document_id))
    keys = provenance.key_set(ctx).model_dump()
    by_kid = {k["kid"]: k for k in keys["keys"]}
    assert set(by_kid) == {old_kid, rotated["kid"]}
    assert by_kid[old_kid]["not_after"] and "not_after" not in by_kid[rotated["kid"]]
    doc = ctx.documents.get(document_id)
    old, new = (provenance.provenance_for(ctx, doc, ctx.documents.get_version(document_id, n)) for n in (1, 2))
    assert old.signature.kid == old_kid and new.signature.kid == rotated["kid"]
    assert rules.verify(old.model_dump(mode="json"), keys, b"<p>before</p>").valid
    assert rules.verify(new.model_dump(mode="json"), keys, b"<p>after</p>").valid
    # a statement dated after the old key's retirement is refused with it
    late = old.model_dump(mode="json")
    late["statement"]["published_at"] = "2099-01-01T00:00:00Z"
    late["signature"].pop("statement_sha256")
    assert [p for p, _ in rules.verify(late, keys, b"<p>before</p>").failures] == ["signature"]


def test_a_server_signs_with_the_key_another_process_rotated(tmp_path):
    """The admin command rotates in its own process: the server's signer sees the new file."""
    from chalicelib.adapters.signing import LocalSigners

    server, admin = LocalSigners(str(tmp_path)), LocalSigners(str(tmp_path))
    before = server.current().public_jwk()["kid"]
    after = admin.rotate().public_jwk()["kid"]
    assert before != after and server.current().public_jwk()["kid"] == after


def test_the_admin_command_rotates_the_local_key(tmp_path, monkeypatch, capsys):
    from chalicelib import wiring
    from scripts import admin

    monkeypatch.setenv("DOCPUB_DATA_DIR", str(tmp_path / "admin-data"))
    monkeypatch.setenv("DOCPUB_STORAGE", "sqlite")
    wiring.reset()
    try:
        assert admin.main(["rotate-signing-key"]) == 0
        first = json.loads(capsys.readouterr().out)
        assert admin.main(["rotate-signing-key"]) == 0
        second = json.loads(capsys.readouterr().out)
    finally:
        wiring.reset()
    assert second["retired"] == [first["kid"]] and second["alg"] == "ES256"


@pytest.mark.aws
def test_kms_signs_raw_r_s_that_verifies(aws, monkeypatch):
    """The deployed signer on moto's KMS: ECC_NIST_P256, the DER signature turned into r||s."""
    import boto3

    from chalicelib.adapters.aws import clients
    from chalicelib.adapters.aws.kms import KmsSigners

    kms = boto3.client("kms", region_name="us-east-1")
    arn = kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["Arn"]
    monkeypatch.setenv("DOCPUB_SIGNING_KMS_KEY", arn)
    clients.kms.cache_clear()
    signer = KmsSigners().current()
    jwk = signer.public_jwk()
    assert jwk["alg"] == "ES256" and jwk["kid"] == rules.thumbprint(jwk) and signer.holder == arn
    message = rules.canonical({"b": 1, "a": "é"})
    raw = signer.sign(message)
    assert len(raw) == 64 and rules.signature_valid(jwk, "ES256", message, raw)
    assert not rules.signature_valid(jwk, "ES256", message + b" ", raw)
    with pytest.raises(RuntimeError, match="deploy"):
        KmsSigners().rotate()


@pytest.mark.aws
def test_a_version_published_on_dynamodb_with_kms_verifies(aws, monkeypatch):
    import boto3

    from chalicelib.adapters.aws import clients
    from chalicelib.models import PublishRequest
    from chalicelib.services import provenance
    from chalicelib.services.auth import credentials_from_key as Credentials
    from chalicelib.wiring import new_context

    kms = boto3.client("kms", region_name="us-east-1")
    arn = kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["Arn"]
    monkeypatch.setenv("DOCPUB_SIGNING_KMS_KEY", arn)
    monkeypatch.setenv("DOCPUB_STORAGE", "aws")
    clients.kms.cache_clear()
    ctx = new_context()
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.workspaces import WorkspaceService

    _, created = WorkspaceService(ctx).create_workspace("KMS", "free")
    result = DocumentService(ctx).publish(Credentials(created.api_key), PublishRequest(title="T", html="<p>k</p>"))
    doc = ctx.documents.get(result.response.document_id)
    answer = provenance.provenance_for(ctx, doc, ctx.documents.get_version(doc.document_id, 1))
    keys = provenance.key_set(ctx).model_dump()
    assert [k["kid"] for k in keys["keys"]] == [answer.signature.kid]
    assert rules.verify(answer.model_dump(mode="json"), keys, b"<p>k</p>").valid


def test_an_eddsa_statement_verifies_and_a_key_for_another_algorithm_does_not():
    """The contract allows ES256 or EdDSA: the one verification takes both (the service signs ES256)."""
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    jwk = rules.public_jwk(key)
    assert (jwk["kty"], jwk["crv"], jwk["alg"]) == ("OKP", "Ed25519", "EdDSA")
    stated = rules.statement("d", "w", 1, rules.sha256_hex(b"x"), [], "2026-11-28T19:00:00Z",
                             {"kind": "oauth_client", "id": "dpc_1", "name": "Agent"})
    signature = {"alg": "EdDSA", "kid": jwk["kid"], "value": rules.b64url(key.sign(rules.canonical(stated)))}
    assert rules.verify({"statement": stated, "signature": signature}, {"keys": [jwk]}, b"x").valid
    wrong = {**signature, "alg": "ES256"}
    assert [p for p, _ in rules.verify({"statement": stated, "signature": wrong}, {"keys": [jwk]}, b"x").failures] \
        == ["signature"]
