"""schemathesis against the real local stack, driven by the served OpenAPI document.

Every operation, positive and negative data, the stateful phase following the
document's links (publish → get / edit / update / delete), and every check
(`--checks all`: no 5xx, status codes, content types, headers and bodies as
documented, negative data rejected, positive data accepted, auth enforced, 405
for undeclared methods, use-after-free, resource availability). Bounded by
DOCPUB_SCHEMATHESIS_EXAMPLES (examples per operation) and a time budget.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stack import LocalStack

pytestmark = pytest.mark.e2e

HERE = Path(__file__).resolve().parents[1]
EXAMPLES = int(os.environ.get("DOCPUB_SCHEMATHESIS_EXAMPLES", "40"))
TIMEOUT_SECONDS = 600


@pytest.fixture(scope="module")
def fuzz_stack(tmp_path_factory):
    """A stack of its own: a write rate limit no fuzzer reaches, so 429 never hides a bug."""
    running = LocalStack(tmp_path_factory.mktemp("fuzz") / "data",
                         env={"DOCPUB_WRITE_RATE_LIMIT": "1000000"}).start()
    yield running
    running.stop()


def test_schemathesis_finds_nothing(fuzz_stack, tmp_path):
    created = fuzz_stack.admin("create-workspace", "--name", "fuzz", "--plan", "pro")
    key = created["api_key"]
    with fuzz_stack.client(key) as http:
        r = http.post("/api/v1/publish", json={"title": "Fuzz target", "html": "<p>fuzz 0 target</p>"})
        assert r.status_code == 200, r.text
        document_id = r.json()["document_id"]
    # Fuzzing reaches a real document too (not only random ids that answer 404).
    config = (HERE / "schemathesis.toml").read_text() + f"""
[[operations]]
include-operation-id = ["getDocument", "updateDocument", "editDocument"]
parameters = {{ "path.document_id" = "{document_id}" }}
"""
    config_path = tmp_path / "schemathesis.toml"
    config_path.write_text(config)
    junit = tmp_path / "junit.xml"
    command = [
        str(Path(sys.executable).with_name("schemathesis")), "--config-file", str(config_path), "--no-color",
        "run", f"{fuzz_stack.base_url}/api/v1/openapi.json",
        "--header", f"X-Api-Key: {key}",
        "--checks", "all", "--mode", "all",
        "--phases", "examples,coverage,fuzzing,stateful",
        "--max-examples", str(EXAMPLES),
        "--workers", "1", "--seed", "20261122", "--generation-database", "none",
        "--request-timeout", "30",
        "--report", "junit", "--report-junit-path", str(junit),
        # The OAuth endpoints speak RFC 6749 (form bodies, redirects, their own error
        # body); tests/test_oauth*.py check every refusal they must give.
        "--exclude-tag", "oauth",
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS,
                         cwd=tmp_path)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-20000:]
    # Every documented operation was exercised (schemathesis skips the document's own
    # route), and the stateful phase ran scenarios along the links.
    from app import app
    from chalicelib import openapi

    expected = {f"{m} {p}" for m, p in openapi.rest_routes(app.routes) if p != "/api/v1/openapi.json"}
    tested = set(re.findall(r'testcase name="([A-Z]+ /[^"]*)"', junit.read_text()))
    assert tested == expected, output[-3000:]
    assert re.search(r"Scenarios:\s+[1-9]", output), output[-3000:]
    # The key went through thousands of requests and never into a log line.
    assert key not in fuzz_stack.log_path.read_text(errors="replace")
