"""The publish scripts of docs/ci.md, run exactly as written, against the local stack."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e

CI_DOC = Path(__file__).resolve().parents[3] / "docs" / "ci.md"


def yaml_blocks() -> list[dict]:
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", CI_DOC.read_text(), re.S)]


def github_publish_step() -> dict:
    """The script step (the section before it uses the GitHub Action: test_github_action.py)."""
    steps = [step for block in yaml_blocks() if "jobs" in block for step in block["jobs"]["test"]["steps"]]
    return next(step for step in steps if step.get("id") == "docpub" and "run" in step)


def gitlab_publish_script() -> str:
    job = next(block for block in yaml_blocks() if "publish-report" in block)["publish-report"]
    assert job["before_script"] == ['pip install "$DOCPUB_CLIENT"']
    return "\n".join(job["script"])


@pytest.fixture
def workdir(tmp_path):
    from conftest import CLIENT_SRC

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "docpub"  # stands in for the console script `pip install` creates
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{CLIENT_SRC}" exec "{sys.executable}" -m docpub "$@"\n')
    wrapper.chmod(0o755)
    run_dir = tmp_path / "job"
    run_dir.mkdir()
    (run_dir / "report.html").write_text("<title>pytest report</title><p>12 passed</p>")
    return bin_dir, run_dir


def run_script(shell: str, script: str, workdir, env: dict) -> subprocess.CompletedProcess:
    from conftest import cli_env

    bin_dir, run_dir = workdir
    full = cli_env(run_dir, None, None, env)
    full["PATH"] = f"{bin_dir}:{full.get('PATH', '/usr/bin:/bin')}"
    return subprocess.run([shell, "-e", "-c", script], cwd=run_dir, env=full, capture_output=True, text=True,
                          timeout=120)


def test_github_actions_step_creates_then_appends(stack, pro_key, api, workdir):
    step = github_publish_step()
    assert set(step["env"]) == {"DOCPUB_URL", "DOCPUB_API_KEY", "DOCPUB_DOCUMENT_ID"}
    assert "${{" not in step["run"]
    summary = workdir[1] / "summary.md"
    outputs = workdir[1] / "outputs.txt"
    env = {"DOCPUB_URL": stack.base_url, "DOCPUB_API_KEY": pro_key, "DOCPUB_DOCUMENT_ID": "",
           "GITHUB_RUN_NUMBER": "41", "GITHUB_SHA": "0123456789abcdef", "GITHUB_REPOSITORY": "acme/app",
           "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs)}
    first = run_script("bash", step["run"], workdir, env)
    assert first.returncode == 0, first.stderr
    notice = re.search(r"::notice title=Docpub::Created document ([0-9a-f-]{36})\.", first.stdout)
    assert notice
    doc_id = notice.group(1)
    url = api.get(f"/api/v1/documents/{doc_id}").json()["share_url"]
    assert summary.read_text() == f"### Test report\n\n[{url}]({url}) (version 1)\n"
    assert outputs.read_text() == f"url={url}\n"

    env.update({"DOCPUB_DOCUMENT_ID": doc_id, "GITHUB_RUN_NUMBER": "42", "GITHUB_SHA": "fedcba9876543210"})
    second = run_script("bash", step["run"], workdir, env)
    assert second.returncode == 0, second.stderr
    assert "::notice" not in second.stdout
    assert summary.read_text().endswith(f"[{url}]({url}) (version 2)\n")
    doc = api.get(f"/api/v1/documents/{doc_id}").json()
    assert doc["title"] == "Test report: acme/app"
    assert [v.get("note") for v in doc["versions"]] == ["run 41, commit 0123456", "run 42, commit fedcba9"]


def test_gitlab_job_creates_then_appends(stack, pro_key, api, workdir):
    script = gitlab_publish_script()
    env = {"DOCPUB_URL": stack.base_url, "DOCPUB_API_KEY": pro_key, "CI_PIPELINE_IID": "7",
           "CI_COMMIT_SHORT_SHA": "abc1234", "CI_PROJECT_PATH": "acme/app"}
    first = run_script("sh", script, workdir, env)
    assert first.returncode == 0, first.stderr
    doc_id = re.search(r"Created document ([0-9a-f-]{36})\.", first.stdout).group(1)
    url = api.get(f"/api/v1/documents/{doc_id}").json()["share_url"]
    assert f"Test report: {url} (version 1)" in first.stdout
    annotations = json.loads((workdir[1] / "docpub-annotations.json").read_text())
    assert annotations == {"Docpub": [{"external_link": {"label": "Test report (version 1)", "url": url}}]}
    assert (workdir[1] / "docpub.env").read_text() == f"DOCPUB_REPORT_URL={url}\n"

    second = run_script("sh", script, workdir, {**env, "DOCPUB_DOCUMENT_ID": doc_id, "CI_PIPELINE_IID": "8"})
    assert second.returncode == 0, second.stderr
    assert "Created document" not in second.stdout
    assert f"Test report: {url} (version 2)" in second.stdout
    doc = api.get(f"/api/v1/documents/{doc_id}").json()
    assert [v.get("note") for v in doc["versions"]] == ["pipeline 7, commit abc1234", "pipeline 8, commit abc1234"]


def test_a_failed_publish_fails_the_job_with_the_auth_status(stack, workdir):
    env = {"DOCPUB_URL": stack.base_url, "DOCPUB_API_KEY": "", "CI_PIPELINE_IID": "1",
           "CI_COMMIT_SHORT_SHA": "abc1234", "CI_PROJECT_PATH": "acme/app"}
    result = run_script("sh", gitlab_publish_script(), workdir, env)
    assert result.returncode == 3
    # with --json the error is JSON on stdout; the recipe shows it in the job log (stderr)
    assert '"code": "unauthorized"' in result.stderr and "no API key" in result.stderr


def curl_recipe() -> str:
    """docs/ci.md's "Without the client" block."""
    section = CI_DOC.read_text().split("## Without the client", 1)[1]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def test_the_curl_recipe_creates_then_appends(stack, pro_key, api, workdir):
    """Issue 37, item 3: the recipe always sent `document_id`, so its first run could not create."""
    env = {"DOCPUB_URL": stack.base_url, "DOCPUB_API_KEY": pro_key, "DOCPUB_DOCUMENT_ID": ""}
    first = run_script("bash", curl_recipe(), workdir, env)
    assert first.returncode == 0, first.stderr
    doc_id = re.search(r"Created document ([0-9a-f-]{36})\.", first.stdout).group(1)
    second = run_script("bash", curl_recipe(), workdir, {**env, "DOCPUB_DOCUMENT_ID": doc_id})
    assert second.returncode == 0, second.stderr
    assert "Created document" not in second.stdout
    doc = api.get(f"/api/v1/documents/{doc_id}").json()
    assert doc["title"] == "Test report" and doc["version_count"] == 2


def test_the_curl_recipe_retries_429_and_5xx_but_never_a_client_error(workdir):
    """Issue 37, item 3: `--retry-all-errors` sent a 422 five times (and printed it five times)."""
    import http.server
    import threading

    answers = [(503, b'{"error":{"code":"internal","message":"try again"}}'),
               (429, b'{"error":{"code":"rate_limited","message":"wait"}}'),
               (422, b'{"error":{"code":"validation_error","message":"html: is required"}}')]
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            seen.append(self.headers["Idempotency-Key"])
            status, body = answers[min(len(seen), len(answers)) - 1]
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Retry-After", "0")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {"DOCPUB_URL": f"http://127.0.0.1:{server.server_address[1]}", "DOCPUB_API_KEY": "dpk_x",
               "DOCPUB_DOCUMENT_ID": ""}
        result = run_script("bash", curl_recipe(), workdir, env)
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode != 0
    assert len(seen) == 3 and len(set(seen)) == 1, seen  # 503, 429 retried with one key; the 422 not
    assert result.stderr.count("html: is required") == 1, result.stderr
