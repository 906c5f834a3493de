"""The GitHub Action (action.yml at the repository root, script
clients/github-action/publish.sh), run as a runner runs a composite step: its `run`
line under bash, the inputs as the step's env, GITHUB_OUTPUT / GITHUB_STEP_SUMMARY
files, against the real local stack. The client is installed from clients/python
by the script itself; only its dependencies come from this virtualenv (a .pth file
in the runner's prepared venv), so the test downloads nothing but pip's build backend.
"""
from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.e2e

PROJECT_DIR = Path(__file__).resolve().parents[3]
ACTION = PROJECT_DIR / "action.yml"
EXPRESSION = re.compile(r"^\$\{\{\s*inputs\.([\w-]+)\s*\}\}$")


def action() -> dict:
    return yaml.safe_load(ACTION.read_text())


def test_the_action_is_a_composite_with_the_documented_inputs_and_outputs():
    spec = action()
    assert spec["runs"]["using"] == "composite"
    assert {"file", "folder", "title", "document-id", "api-key", "base-url"} <= set(spec["inputs"])
    assert spec["inputs"]["api-key"]["required"] and spec["inputs"]["base-url"]["required"]
    assert {"document-id", "share-url"} <= set(spec["outputs"])
    (step,) = spec["runs"]["steps"]
    assert "${{" not in step["run"], "inputs must reach the script through env, never pasted into it"
    assert all(EXPRESSION.match(value) for value in step["env"].values())
    assert set(EXPRESSION.match(v).group(1) for v in step["env"].values()) == set(spec["inputs"])
    for name, output in spec["outputs"].items():
        assert output["value"] == f"${{{{ steps.{step['id']}.outputs.{name} }}}}"
    docs = (PROJECT_DIR / "docs" / "ci.md").read_text()
    assert "uses: your-org/docpub@" in docs


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    """RUNNER_TEMP with the client's virtualenv where the script looks for it, made like
    `python3 -m venv` makes it but with this virtualenv's packages (pip included) visible.
    One runner for the module, as one job runs the action several times: the first run
    installs the client, the others find it installed."""
    tmp_path = tmp_path_factory.mktemp("action")
    temp = tmp_path / "runner-temp"
    venv = temp / "docpub-client"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "shared-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp_path / "workspace"
    work.mkdir()
    (work / "report.html").write_text("<title>Nightly report</title><h1>12 passed</h1>")
    return temp, work


def run_action(runner, inputs: dict, run_number: int = 41) -> tuple[subprocess.CompletedProcess, dict, str]:
    """One use of the action: (process, outputs, job summary)."""
    temp, work = runner
    spec = action()
    (step,) = spec["runs"]["steps"]
    outputs, summary = temp / f"output-{run_number}", temp / f"summary-{run_number}"
    outputs.unlink(missing_ok=True)
    summary.unlink(missing_ok=True)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(temp), "RUNNER_TEMP": str(temp),
           "GITHUB_ACTION_PATH": str(PROJECT_DIR), "GITHUB_OUTPUT": str(outputs),
           "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_RUN_NUMBER": str(run_number),
           "GITHUB_SHA": "0123456789abcdef0123", "GITHUB_WORKSPACE": str(work)}
    for name, expression in step["env"].items():
        key = EXPRESSION.match(expression).group(1)
        env[name] = inputs.get(key, spec["inputs"][key].get("default", ""))
    process = subprocess.run([step["shell"], "-e", "-c", step["run"]], cwd=work, env=env,
                             capture_output=True, text=True, timeout=300)
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines()) if outputs.exists() else {}
    return process, written, summary.read_text() if summary.exists() else ""


def test_the_action_creates_a_document_then_appends_versions_behind_the_same_link(stack, pro_key, api, runner):
    inputs = {"file": "report.html", "api-key": pro_key, "base-url": stack.base_url}
    (runner[0] / "docpub-client" / ".docpub-client").unlink(missing_ok=True)  # as on a fresh runner
    first, out, summary = run_action(runner, inputs, run_number=41)
    assert first.returncode == 0, first.stdout + first.stderr
    doc_id, url = out["document-id"], out["share-url"]
    assert out["version-number"] == "1" and url.startswith(stack.base_url + "/d/")
    assert f"::notice title=Docpub::Created document {doc_id}." in first.stdout
    assert summary == f"### Published to Docpub\n\n[{url}]({url}) (version 1)\n"
    assert (runner[0] / "docpub-client" / "bin" / "docpub").exists()  # installed from clients/python
    assert "already installed" not in first.stdout
    stored = api.get(f"/api/v1/documents/{doc_id}").json()
    assert stored["title"] == "Nightly report" and stored["versions"][-1]["note"] == "run 41, commit 0123456"

    (runner[1] / "report.html").write_text("<title>Nightly report</title><h1>13 passed</h1>")
    second, out, summary = run_action(runner, {**inputs, "document-id": doc_id, "title": "Nightly (main)",
                                               "note": "manual"}, run_number=42)
    assert second.returncode == 0, second.stdout + second.stderr
    assert out == {"document-id": doc_id, "share-url": url, "version-number": "2"}
    assert "::notice" not in second.stdout
    # Issue 37, item 6: the second run in the job finds the client in its virtualenv (pip ran every time).
    assert "Docpub client 0.1.0 already installed" in second.stdout, second.stdout
    stored = api.get(f"/api/v1/documents/{doc_id}", params={"include_html": "true"}).json()
    assert stored["title"] == "Nightly (main)" and stored["versions"][-1]["note"] == "manual"
    assert "13 passed" in stored["html"]
    for process in (first, second):  # the key only ever appears in the runner's mask command
        assert process.stdout.count(pro_key) == 1 and f"::add-mask::{pro_key}" in process.stdout
        assert pro_key not in process.stderr


@pytest.mark.parametrize("inputs, status, message", [
    ({"file": "report.html", "api-key": "dpk_" + "x" * 40}, 3, "::error title=Docpub::invalid_api_key: "),
    ({"file": "report.html", "folder": "."}, 2, "::error title=Docpub::give either file or folder, not both"),
    ({}, 2, "::error title=Docpub::give file (an HTML file) or folder"),
    ({"file": "missing.html"}, 2, "::error title=Docpub::file: no such file: missing.html"),
    ({"file": "report.html", "api-key": ""}, 3, "::error title=Docpub::api-key is empty"),
    ({"file": "report.html", "document-id": "00000000-0000-4000-8000-000000000000"}, 4,
     "::error title=Docpub::not_found: "),
])
def test_a_failing_publish_fails_the_step_with_the_clients_status_and_an_annotation(
        stack, pro_key, runner, inputs, status, message):
    full = {"api-key": pro_key, "base-url": stack.base_url, **inputs}
    process, out, summary = run_action(runner, full)
    assert process.returncode == status, process.stdout + process.stderr
    assert message in process.stdout
    assert out == {} and summary == ""


def test_a_folder_is_published_as_one_document(stack, pro_key, api, runner):
    """`folder` hands the folder to `docpub publish` (a folder becomes a bundle)."""
    site = runner[1] / "site"
    site.mkdir()
    (site / "index.html").write_text('<title>Site</title><link rel="stylesheet" href="style.css"><h1>Hi</h1>')
    (site / "style.css").write_text("h1 { color: teal }")
    process, out, _ = run_action(runner, {"folder": "site", "api-key": pro_key, "base-url": stack.base_url})
    assert process.returncode == 0, process.stdout + process.stderr
    assert out["version-number"] == "1" and out["share-url"].startswith(stack.base_url + "/d/")
    assert api.get(f"/api/v1/documents/{out['document-id']}").status_code == 200


def test_a_changed_client_is_installed_again(stack, pro_key, runner):
    """The virtualenv is reused only while it holds this client's version (a stamp of
    clients/python's sources); any other stamp reinstalls."""
    inputs = {"file": "report.html", "api-key": pro_key, "base-url": stack.base_url}
    stamp = runner[0] / "docpub-client" / ".docpub-client"
    stamp.write_text("0.0.9 an older client\n")
    again, _, _ = run_action(runner, inputs, run_number=2)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already installed" not in again.stdout
    assert stamp.read_text() != "0.0.9 an older client\n"
