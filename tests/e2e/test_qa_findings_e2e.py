"""Defects of the real local stack (`make run`) found by driving it over raw HTTP
(helper s3-qa), each reproduced here before its fix."""
from __future__ import annotations

import json
import socket

import pytest

pytestmark = pytest.mark.e2e


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


@pytest.mark.parametrize("method", [b"POST", b"PATCH", b"TRACE"])
def test_a_content_length_that_is_not_a_number_is_400_not_a_dropped_connection(stack, method):
    """Reproduction: `Content-Length: abc` on POST /api/v1/publish got no answer at all
    (chalice local's int() raised, the connection closed empty, a traceback logged).
    A header the server cannot read is 400 `invalid_request` (contract section 4)."""
    data = _raw(stack.port, method + b" /api/v1/publish HTTP/1.1\r\nHost: local\r\nContent-Type: application/json\r\n"
                b"Content-Length: abc\r\nConnection: close\r\n\r\n{}")
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), data[:300]
    assert json.loads(body)["error"]["code"] == "invalid_request"


def test_docpub_download_takes_a_version_number_like_docpub_get(stack, tmp_path):
    """Reproduction: `docpub get ID --html --version 1` takes the number, but
    `docpub download ID --version 1` (what docs/provenance.md sends you to, to verify a
    version from its files) answered `not_found: No version 1 of document …`: it took
    only a version id. Both take the number N now (download also a version id), and the
    file verifies offline against that version's provenance."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    key = stack.admin("create-workspace", "--name", "QA download")["api_key"]
    with stack.client(key) as http:
        doc = http.post("/api/v1/publish", json={"title": "Notes", "html": "<p>one</p>"}).json()
        http.post("/api/v1/publish", json={"document_id": doc["document_id"], "html": "<p>two</p>"})
        provenance = http.get(f"/api/v1/documents/{doc['document_id']}/versions/1/provenance").json()
    (tmp_path / "prov.json").write_text(json.dumps(provenance))
    (tmp_path / "keys.json").write_text(json.dumps(stack.client().get("/.well-known/docpub-signing-keys.json").json()))
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "DOCPUB_URL": stack.base_url, "DOCPUB_API_KEY": key,
           "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "clients" / "python" / "src")}

    def docpub(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "docpub", *args], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=120)

    run = docpub("download", doc["document_id"], "--version", "1", "-o", "v1.html")
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "v1.html").read_text() == "<p>one</p>"
    run = docpub("download", doc["document_id"], "--version", doc["version_id"], "-o", "by-id.html")
    assert run.returncode == 0 and (tmp_path / "by-id.html").read_text() == "<p>one</p>", run.stderr
    run = docpub("verify", "v1.html", "--provenance", "prov.json", "--keys", "keys.json")
    assert run.returncode == 0, run.stdout + run.stderr
    run = docpub("download", doc["document_id"], "--version", "3")
    assert run.returncode == 4 and "has no version 3" in run.stderr, run.stderr


def test_docpub_export_waits_with_its_own_option_and_warns_of_nothing(stack, tmp_path):
    """Reproduction: `docpub export` declared its own `--timeout` (seconds to wait for the
    build, as clients/python/README.md documents) beside the common `--timeout` (seconds per
    HTTP request): every run printed click's "UserWarning: The parameter --timeout is used
    more than once", and `--timeout 0.5` was judged as the per-request one ("not in the
    range 1<=x<=3600"). The wait is `--wait SECONDS` now."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    key = stack.admin("create-workspace", "--name", "QA export")["api_key"]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "DOCPUB_URL": stack.base_url, "DOCPUB_API_KEY": key,
           "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "clients" / "python" / "src")}
    run = subprocess.run([sys.executable, "-W", "default", "-m", "docpub", "export", "--help"], capture_output=True,
                         text=True, env=env, timeout=60)
    assert run.returncode == 0 and "Warning" not in run.stderr, run.stderr
    assert "--wait" in run.stdout and "Seconds to wait for it to be built" in run.stdout
    run = subprocess.run([sys.executable, "-W", "default", "-m", "docpub", "export", "--wait", "120", "-o",
                          str(tmp_path / "w.zip")], capture_output=True, text=True, env=env, timeout=180)
    assert run.returncode == 0 and "Warning" not in run.stderr, run.stderr
    assert (tmp_path / "w.zip").stat().st_size > 0


def test_docpub_verify_says_which_link_it_could_not_read_and_what_to_do(stack, tmp_path):
    """Reproduction: `docpub verify http://…/d/<unknown>` said only `not_found: HTTP 404
    from the service`, and a recipients link `unauthorized: This document is shared with
    some people only.`, with no word of the way docs/provenance.md gives (verify a
    protected version from its files). The message names the URL and the way out."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    key = stack.admin("create-workspace", "--name", "QA verify")["api_key"]
    with stack.client(key) as http:
        doc = http.post("/api/v1/publish", json={"title": "Kept", "html": "<p>x</p>", "share_access": "recipients",
                                                 "share_recipients": ["kim@example.com"]}).json()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "clients" / "python" / "src")}

    def verify(url: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "docpub", "verify", url], capture_output=True, text=True,
                              env=env, timeout=60)

    unknown = f"{stack.base_url}/d/AAAAAAAAAAAAAAAAAAAAAA"
    run = verify(unknown)
    assert run.returncode == 4, run.stderr
    assert unknown in run.stderr and "no such link" in run.stderr, run.stderr
    run = verify(doc["share_url"])
    assert run.returncode == 3, run.stderr
    assert "docpub verify FILE --provenance" in run.stderr and "docpub download" in run.stderr, run.stderr
