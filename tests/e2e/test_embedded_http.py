"""The measured failure of the old stack, over HTTP on the embedded store: 40
racing edits of one document through chalice local on SQLite, while another
process (as `make admin` does) writes to the same database. Every edit answers
200 (no 5xx), versions are gapless, and every version's HTML is readable."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.stack import PROJECT_DIR, free_port

pytestmark = pytest.mark.e2e


@pytest.fixture
def embedded_server(tmp_path):
    port = free_port()
    data_dir = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DOCPUB_"))}
    env.update({"DOCPUB_STORAGE": "sqlite", "DOCPUB_DATA_DIR": str(data_dir), "PORT": str(port)})
    log = open(tmp_path / "server.log", "ab")
    process = subprocess.Popen([sys.executable, "-m", "scripts.serve_local", "--port", str(port), "--no-autoreload"],
                               cwd=PROJECT_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            try:
                if httpx.get(base + "/api/v1/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        yield base, data_dir
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
        log.close()


def test_forty_concurrent_edits_over_http_on_sqlite(embedded_server):
    from chalicelib.adapters.sqlite import repositories
    from chalicelib.services.context import Context
    from chalicelib.services.workspaces import WorkspaceService

    base, data_dir = embedded_server
    # Another process's write to the same database (the admin CLI's way in).
    _, key = WorkspaceService(Context(repos=repositories(data_dir, shared=False))).create_workspace("HTTP", "pro")
    # At most 5 connections at once: chalice local's listen backlog is 5 until the
    # local stack raises it (issue 14 part B); storage sees 5 concurrent writers.
    limits = httpx.Limits(max_connections=5)
    with httpx.Client(base_url=base, headers={"X-Api-Key": key.api_key}, timeout=60, limits=limits) as client:
        doc = client.post("/api/v1/publish", json={"title": "T", "html": "<main><!--end--></main>"}).json()
        path = f"/api/v1/documents/{doc['document_id']}"

        def edit(i):
            return client.post(path + "/edit", json={"edits": [
                {"old_string": "<!--end-->", "new_string": f"<p>e{i}</p><!--end-->"}]}).status_code

        with ThreadPoolExecutor(40) as pool:
            statuses = list(pool.map(edit, range(40)))
        assert statuses == [200] * 40
        detail = client.get(path, params={"include_html": "true"}).json()
        assert [v["number"] for v in detail["versions"]] == list(range(1, 42))
        assert all(f"<p>e{i}</p>" in detail["html"] for i in range(40))
        for version in detail["versions"]:
            r = client.get(path, params={"include_html": "true", "version_id": version["version_id"]})
            assert r.status_code == 200
