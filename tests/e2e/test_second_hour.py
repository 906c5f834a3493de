"""Issue 29, "the second hour": what a new user trips on after the quick start.

One test (or more) per numbered item of the issue where one can hold it; the
dashboard items (6, 7) are in tests/http/test_dashboard_second_hour.py, the CLI's
list output (4) in clients/python/tests/test_docpub_list_output.py, /docs (5)
in tests/http/test_docs_page.py.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from scripts import local_stack

PROJECT_DIR = Path(__file__).resolve().parents[2]
README = PROJECT_DIR / "README.md"
SHELL_BLOCK = re.compile(r"^```(?:sh|bash|shell)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def _readme_blocks() -> list[str]:
    return SHELL_BLOCK.findall(README.read_text(encoding="utf-8"))


# 1. The README's backup block creates backup/ (holding secrets): git must ignore it, and
# everything else the README's examples write into the checkout when a reader runs them there.
def test_everything_a_readme_block_writes_into_the_checkout_is_git_ignored():
    if shutil.which("git") is None or not (PROJECT_DIR / ".git").exists():
        pytest.skip("not a git checkout")
    blocks = _readme_blocks()
    folders = {name.rstrip("/") for block in blocks for name in re.findall(r"mkdir -p ([\w./-]+)", block)}
    files = {name for block in blocks for name in re.findall(r"(?<=\s)>>? *([A-Za-z][\w./-]*\.(?:html|md|json|txt|zip|css|svg))\b", block)}
    assert "backup" in folders  # the backup block is still there
    probes = [f"{name}/docpub.sqlite3" for name in folders if not name.startswith(("/", "$", "~"))]
    probes += [name for name in files if not name.startswith(("/", "$", "~"))]
    for probe in sorted(probes):
        ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", probe], cwd=PROJECT_DIR)
        assert ignored.returncode == 0, f"{probe} is written by a README block but not in .gitignore"


# 2. `make test` restarted a running `make run`: chalice package (make package, run by
# the infra tests) writes .chalice/deployments, which the autoreloader watched.
def test_autoreload_ignores_what_chalice_package_writes_but_sees_the_config(tmp_path):
    shutil.copytree(PROJECT_DIR / ".chalice", tmp_path / ".chalice",
                    ignore=shutil.ignore_patterns("deployments", "venv"))
    (tmp_path / "app.py").write_text("# app\n")
    before = local_stack.source_state(tmp_path)
    for written in (".chalice/deployments/abc123-python3.11.zip", ".chalice/venv/lib/x.py"):
        (tmp_path / written).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / written).write_bytes(b"zip")
    assert local_stack.source_state(tmp_path) == before
    config = tmp_path / ".chalice" / "config.json"
    config.write_text(config.read_text() + "\n")
    assert local_stack.source_state(tmp_path) != before


# 3. The MCP Inspector command needs `npx -y` to run unattended (npx asks before installing).
def test_every_npx_command_in_the_docs_installs_without_asking():
    texts = [README] + sorted((PROJECT_DIR / "docs").glob("*.md")) + [PROJECT_DIR / "clients/python/README.md"]
    found = 0
    for path in texts:
        # `npx <package>` (scoped, or pinned with @): prose such as "without npx or" is not a command
        for match in re.finditer(r"\bnpx\s+((?:-\S+\s+)*)(@?[\w.-]+(?:/[\w.-]+)?@[\w.^~-]+|@[\w.-]+/[\w.-]+)",
                                 path.read_text(encoding="utf-8")):
            options = match.group(1).split()
            assert "-y" in options or "--yes" in options, \
                f"{path.name}: `npx {match.group(2)}` asks before installing; use `npx -y`"
            found += 1
    assert found >= 1


# 8. `make run` could not bind another address.
@pytest.mark.parametrize("args, host", [([], "127.0.0.1"), (["HOST=0.0.0.0"], "0.0.0.0")])
def test_make_run_listens_on_HOST(args, host):
    env = {k: v for k, v in __import__("os").environ.items() if k != "HOST"}
    dry = subprocess.run(["make", "-n", "-o", ".venv/bin/.installed", "run", *args], cwd=PROJECT_DIR,
                         capture_output=True, text=True, env=env, timeout=60)
    assert dry.returncode == 0, dry.stderr
    assert f"scripts.local_stack --host {host} --port" in dry.stdout


@pytest.mark.parametrize("host, base, content", [
    ("127.0.0.1", "http://127.0.0.1:8000", "http://localhost:8000"),
    ("0.0.0.0", "http://127.0.0.1:8000", "http://localhost:8000"),
    ("192.168.1.20", "http://192.168.1.20:8000", ""),
    ("::", "http://127.0.0.1:8000", "http://localhost:8000"),
    ("fd00::5", "http://[fd00::5]:8000", ""),
])
def test_the_default_urls_follow_the_address(host, base, content):
    assert local_stack.default_urls(host, 8000) == {"DOCPUB_BASE_URL": base, "DOCPUB_CONTENT_URL": content}


def test_a_base_url_others_can_open_drops_the_localhost_content_site():
    urls = local_stack.default_urls("0.0.0.0", 8000, "http://192.168.1.20:8000")
    assert urls == {"DOCPUB_BASE_URL": "http://192.168.1.20:8000", "DOCPUB_CONTENT_URL": ""}


def test_make_run_says_what_changes_off_loopback():
    assert local_stack.exposure_notes("127.0.0.1", 8000, "http://127.0.0.1:8000") == []
    notes = " ".join(local_stack.exposure_notes("0.0.0.0", 8000, "http://127.0.0.1:8000"))
    assert "other machines can reach" in notes and "DOCPUB_BASE_URL" in notes and "Secure" in notes
    notes = " ".join(local_stack.exposure_notes("0.0.0.0", 8000, "https://demo.example.com"))
    assert "DOCPUB_BASE_URL to the address" not in notes and "Secure" not in notes
    readme = README.read_text(encoding="utf-8")
    assert "make run HOST=0.0.0.0" in readme and "`Secure`" in readme


# 8. The README said "303 SEE OTHER": the status line it shows is the one the server sends.
@pytest.mark.e2e
def test_the_unlock_status_line_in_the_readme_is_what_the_server_sends(stack):
    shown = re.search(r"^# (HTTP/1\.1 303 .+)$", README.read_text(encoding="utf-8"), re.M).group(1)
    pro = stack.admin("create-workspace", "--name", "Second hour", "--plan", "pro")
    with stack.client(pro["api_key"]) as http:
        doc = http.post("/api/v1/publish", json={"title": "Locked", "html": "<p>x</p>"}).json()
        assert http.put(f"/api/v1/documents/{doc['document_id']}/passphrase",
                        json={"passphrase": "violet tractor lagoon 93"}).status_code == 204
    share = doc["share_url"].rsplit("/d/", 1)[1]
    answer = httpx.post(f"{stack.base_url}/d/{share}/unlock", data={"passphrase": "violet tractor lagoon 93"})
    assert f"HTTP/1.1 {answer.status_code} {answer.reason_phrase}" == shown


# 7. The upgrade hint's operator command is for operators: on `make run` (loopback) that is
# whoever signs in; off loopback, nobody unless DOCPUB_OPERATOR_EMAILS names them.
@pytest.fixture
def fresh_stack(tmp_path):
    """A stack of its own: sign-ups are limited per address, and the shared stack's
    other tests may have used this address's budget."""
    from tests.stack import LocalStack

    running = LocalStack(tmp_path / "data").start()
    yield running
    running.stop()


@pytest.mark.e2e
def test_make_run_on_loopback_shows_the_operator_command_to_whoever_signs_in(fresh_stack):
    stack = fresh_stack
    with httpx.Client(base_url=stack.base_url, timeout=30) as http:
        form = http.get("/dashboard/sign-up")
        token = re.search(r'name="csrf_token" value="([^"]+)"', form.text).group(1)
        done = http.post("/dashboard/sign-up", data={"csrf_token": token, "email": "local@example.com",
                                                     "password": "a long local password 42",
                                                     "workspace_name": "Local"})
        assert done.status_code in (200, 303), done.text
        if "Check your email" in done.text:  # confirm the address through the outbox's link
            from tests.dashboard_client import mail_link

            link = mail_link("local@example.com", "verify", str(stack.data_dir))
            path = link[link.index("/dashboard/"):]
            form = http.get(path).text
            csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
            confirmed = http.post(path.split("?", 1)[0], data={"csrf_token": csrf,
                                                               "token": path.split("token=", 1)[1]})
            assert confirmed.status_code == 303, confirmed.text
        page = http.get("/dashboard/workspace").text
    ws = re.search(r"<code>(ws_[^<]+)</code>", page).group(1)
    assert f'make -s admin ARGS="set-plan {ws} pro"' in page.replace("&#34;", '"').replace("&quot;", '"')
