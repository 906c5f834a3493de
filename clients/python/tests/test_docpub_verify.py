"""`docpub verify` (contract 7g): exit 0 when the content, the statement and the signature
hold, 7 when one does not, naming it. One byte changed in the content, in the statement
or in the signature of PROVENANCE.json: each refused, with its part. Offline with --keys;
against the real local stack with a share URL."""
from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest

from chalicelib.domain import provenance as rules
from conftest import Cli

PAGE = b"<!doctype html><title>Q3</title><p>Revenue grew 12 %.</p>"


def _signed(content: bytes, files: dict[str, bytes] | None = None) -> tuple[dict, dict]:
    """(provenance, keys) of `content` signed as the service signs a version."""
    signer = rules.MemorySigner()
    stated = rules.statement("doc-1", "ws_1", 3, hashlib.sha256(content).hexdigest(),
                             [{"path": p, "sha256": hashlib.sha256(b).hexdigest()} for p, b in (files or {}).items()],
                             "2026-11-28T19:02:11Z", {"kind": "key", "id": "key_1", "name": "CI"})
    message = rules.canonical(stated)
    jwk = signer.public_jwk()
    signature = {"alg": "ES256", "kid": jwk["kid"], "value": rules.b64url(signer.sign(message)),
                 "statement_sha256": rules.sha256_hex(message)}
    return {"statement": stated, "signature": signature}, {"keys": [dict(jwk)]}


@pytest.fixture
def offline(tmp_path):
    return Cli(tmp_path, None, None)


def _files(tmp_path, content: bytes, provenance: dict | str, keys: dict, name: str = "report.html"):
    (tmp_path / name).write_bytes(content)
    text = provenance if isinstance(provenance, str) else json.dumps(provenance, indent=1)
    (tmp_path / "prov.json").write_text(text)
    (tmp_path / "keys.json").write_text(json.dumps(keys))
    return [str(tmp_path / name), "--provenance", str(tmp_path / "prov.json"), "--keys", str(tmp_path / "keys.json")]


def _one_byte(text: str, old: str, new: str) -> str:
    """`text` with the first `old` (one character in its context) replaced: one byte changed."""
    assert old in text and len(old) == len(new)
    return text.replace(old, new, 1)


def test_a_valid_version_exits_0(offline, tmp_path):
    provenance, keys = _signed(PAGE)
    result = offline("verify", *_files(tmp_path, PAGE, provenance, keys))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("valid: version 3 of document doc-1, published by key CI at 2026-11-28T19:02:11Z")
    assert json.loads(offline("verify", *_files(tmp_path, PAGE, provenance, keys), "--json").stdout)["valid"] is True


def test_one_byte_of_content_changed_exits_7_content(offline, tmp_path):
    provenance, keys = _signed(PAGE)
    result = offline("verify", *_files(tmp_path, PAGE.replace(b"12", b"13"), provenance, keys))
    assert result.returncode == 7
    assert result.stderr.strip() == ("docpub: invalid content: the content's SHA-256 is not the statement's "
                                     "content_sha256")


def test_one_byte_of_the_statement_changed_exits_7_statement(offline, tmp_path):
    provenance, keys = _signed(PAGE)
    text = _one_byte(json.dumps(provenance, indent=1), "19:02:11Z", "19:02:12Z")
    result = offline("verify", *_files(tmp_path, PAGE, text, keys))
    assert result.returncode == 7
    assert result.stderr.strip() == "docpub: invalid statement: the statement was changed after it was signed"
    # without the diagnostic digest, the same change is a signature that does not verify over it
    provenance["signature"].pop("statement_sha256")
    text = _one_byte(json.dumps(provenance, indent=1), "19:02:11Z", "19:02:12Z")
    result = offline("verify", *_files(tmp_path, PAGE, text, keys))
    assert result.returncode == 7 and "invalid signature: the signature does not verify" in result.stderr


def test_one_byte_of_the_signature_changed_exits_7_signature(offline, tmp_path):
    provenance, keys = _signed(PAGE)
    value = provenance["signature"]["value"]
    changed = value[:20] + ("A" if value[20] != "A" else "B") + value[21:]
    text = _one_byte(json.dumps(provenance, indent=1), value, changed)
    result = offline("verify", *_files(tmp_path, PAGE, text, keys))
    assert result.returncode == 7
    assert result.stderr.strip().startswith("docpub: invalid signature: the signature does not verify over the "
                                            "statement with key ")


def test_a_key_not_in_the_keys_and_a_bundle_zip(offline, tmp_path):
    files = {"img/chart.svg": b"<svg/>", "style.css": b"p{color:red}"}
    provenance, keys = _signed(PAGE, files)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("index.html", PAGE)
        for path, data in files.items():
            z.writestr(path, data)
    assert offline("verify", *_files(tmp_path, archive.getvalue(), provenance, keys, "site.zip")).returncode == 0
    tampered = io.BytesIO()
    with zipfile.ZipFile(tampered, "w") as z:
        z.writestr("index.html", PAGE)
        z.writestr("img/chart.svg", b"<svg></svg>")
        z.writestr("style.css", files["style.css"])
    result = offline("verify", *_files(tmp_path, tampered.getvalue(), provenance, keys, "site.zip"))
    assert result.returncode == 7 and "invalid content: img/chart.svg: its SHA-256 is not the statement's" in result.stderr
    _, other_keys = _signed(PAGE)
    result = offline("verify", *_files(tmp_path, PAGE, _signed(PAGE)[0], other_keys))
    assert result.returncode == 7 and "invalid signature: no key" in result.stderr
    assert offline("verify", "not-a-url-or-file").returncode == 2


def test_verify_a_share_url_of_the_local_stack(cli, stack, tmp_path):
    """Against the real stack: content, statement and keys fetched from the share URL; then the
    same version offline from the files the service hands out."""
    import httpx

    (tmp_path / "q3.html").write_bytes(PAGE)
    url = cli.ok("publish", str(tmp_path / "q3.html")).stdout.strip()
    result = cli.ok("verify", url)
    assert result.stdout.startswith("valid: version 1 of document ")
    assert cli.ok("verify", url + "?v=1").stdout == result.stdout
    provenance = httpx.get(url.replace("/d/", "/d/", 1) + "/provenance").content
    keys = httpx.get(stack.base_url + "/.well-known/docpub-signing-keys.json").content
    (tmp_path / "prov.json").write_bytes(provenance)
    (tmp_path / "keys.json").write_bytes(keys)
    offline = Cli(tmp_path, None, None)
    assert offline("verify", str(tmp_path / "q3.html"), "--provenance", str(tmp_path / "prov.json"),
                   "--keys", str(tmp_path / "keys.json")).returncode == 0
    (tmp_path / "q3.html").write_bytes(PAGE + b" ")
    assert offline("verify", str(tmp_path / "q3.html"), "--provenance", str(tmp_path / "prov.json"),
                   "--keys", str(tmp_path / "keys.json")).returncode == 7
