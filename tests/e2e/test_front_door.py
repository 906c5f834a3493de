"""The front door (issue 17): `/` landing page, `/docs` API reference, the favicon.

In-process checks of content and headers, then real Chromium against the real
local stack (screenshots in docs/screenshots/).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.chromium import ARGS, CHROMIUM, browser, sign_up  # noqa: F401  (browser: a fixture)

PROJECT_DIR = Path(__file__).resolve().parents[2]
# Like tests/browser/test_dashboard_browser.py: screenshots go to a temporary folder unless
# DOCPUB_SCREENSHOT_DIR=docs/screenshots (how docs/screenshots/front-door.png and
# api-reference.png were made), so test runs do not rewrite committed images.
SCREENSHOTS = Path(os.environ.get("DOCPUB_SCREENSHOT_DIR") or tempfile.mkdtemp(prefix="docpub-shots-"))


def _text(response) -> str:
    return response.body.decode() if isinstance(response.body, bytes) else response.body


def _header(response, name):
    return {k.lower(): v for k, v in response.headers.items()}.get(name.lower())


def test_landing_page_says_what_docpub_is_and_how_to_start(client):
    r = client.http.get("/")
    assert r.status_code == 200
    assert _header(r, "Content-Type").startswith("text/html")
    assert "default-src 'none'" in _header(r, "Content-Security-Policy")
    page = _text(r)
    assert "shareable link" in page
    assert 'href="/dashboard/sign-up"' in page and 'href="/dashboard/sign-in"' in page
    assert 'href="/docs"' in page and 'href="/api/v1/openapi.json"' in page
    assert "http://127.0.0.1:8000/mcp" in page  # the MCP connector URL (DOCPUB_BASE_URL)
    assert "/api/v1/publish" in page and "X-Api-Key" in page
    assert '<link rel="icon" href="/favicon.svg"' in page
    # nothing from other origins: every src/href is local
    for url in re.findall(r'(?:src|href)="([^"]+)"', page):
        assert url.startswith(("/", "#")), url


def test_the_landing_page_uses_the_configured_base_url_escaped(client, monkeypatch):
    monkeypatch.setenv("DOCPUB_BASE_URL", "https://docs.example.com/<x>")
    page = _text(client.http.get("/"))
    assert "https://docs.example.com/&lt;x&gt;/mcp" in page and "<x>" not in page


def test_docs_renders_every_operation_and_schema_of_the_openapi_document(client):
    document = json.loads(_text(client.http.get("/api/v1/openapi.json")))
    r = client.http.get("/docs")
    assert r.status_code == 200 and _header(r, "Content-Type").startswith("text/html")
    page = _text(r)
    for path, methods in document["paths"].items():
        for method in methods:
            if method.upper() in ("GET", "POST", "PUT", "PATCH", "DELETE"):
                assert f'<span class="method {method.upper()}">{method.upper()}</span> <code>{path}</code>' in page
    for name in document["components"]["schemas"]:
        assert f'id="schema-{name}"' in page
    assert "1 to 500 characters; not blank" in page  # PublishRequest.title's rules, in words
    assert "<script" not in page
    for url in re.findall(r'(?:src|href)="([^"]+)"', page):
        assert url.startswith(("/", "#")), url


def test_favicon(client):
    for path in ("/favicon.ico", "/favicon.svg"):
        r = client.http.get(path)
        assert r.status_code == 200 and _header(r, "Content-Type") == "image/svg+xml"
        assert _text(r).lstrip().startswith("<svg")


def test_front_door_pages_never_import_on_rest_requests():
    """jinja2 and the OpenAPI builder load on first use only (cold start of REST routes)."""
    import sys

    out = subprocess.run([sys.executable, "-c", (
        "import sys, app; print('jinja2' in sys.modules, 'chalicelib.openapi' in sys.modules)")],
        cwd=PROJECT_DIR, capture_output=True, text=True, timeout=60,
        env={**os.environ, "AWS_DEFAULT_REGION": "us-east-1"})
    assert out.stdout.split() == ["False", "False"], out.stderr


# ------------------------------------------------------------------ real Chromium on the local stack


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def _watch(page, stack):
    """Requests to other origins and console errors (CSP refusals show up there)."""
    seen = {"foreign": [], "errors": []}
    origin = urlparse(stack.base_url).netloc
    page.on("request", lambda req: urlparse(req.url).netloc not in (origin, "")
            and not req.url.startswith("data:") and seen["foreign"].append(req.url))
    page.on("console", lambda msg: msg.type == "error" and seen["errors"].append(msg.text))
    return seen


@pytest.mark.e2e
@pytest.mark.browser
def test_landing_page_in_chromium_leads_to_sign_up_and_its_curl_runs(stack, page):
    seen = _watch(page, stack)
    page.goto(stack.base_url + "/")
    assert page.title().startswith("Docpub")
    assert page.get_by_role("heading", level=1).text_content() == "Publish HTML, Markdown or a folder. Get a link."
    assert page.locator("#mcp ~ pre").text_content().strip() == stack.base_url + "/mcp"
    icon = page.locator('link[rel="icon"]').get_attribute("href")
    assert page.request.get(stack.base_url + icon).headers["content-type"] == "image/svg+xml"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "front-door.png"), full_page=True)

    # the 3-line curl, exactly as shown, publishes with a real key
    shown = page.locator("#curl ~ pre").text_content()
    own_key = stack.admin("create-workspace", "--name", "Front door", "--plan", "free")["api_key"]
    script = shown.replace("KEY=dpk_your_key", f"KEY={own_key}")
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["share_url"].startswith(stack.base_url + "/d/")

    page.get_by_role("link", name="Sign up").first.click()
    page.wait_for_url("**/dashboard/sign-up")
    page.goto(stack.base_url + "/")
    page.get_by_role("link", name="Sign in").first.click()
    page.wait_for_url("**/dashboard/sign-in")
    assert seen == {"foreign": [], "errors": []}


@pytest.mark.e2e
@pytest.mark.browser
def test_api_reference_in_chromium(stack, page):
    seen = _watch(page, stack)
    page.goto(stack.base_url + "/")
    page.get_by_role("link", name="API reference").first.click()
    page.wait_for_url("**/docs")
    assert page.title() == "API reference · Docpub"
    assert page.locator("section.op").count() >= 10
    page.locator('a[href="#op-publish"]').click()
    assert page.locator("#op-publish").is_visible()
    schema = page.locator("details:has(> #schema-PublishRequest)")
    assert schema.get_attribute("open") is None  # schemas start folded (issue 29: the page was 25,000 px)
    page.locator('#op-publish a[href="#schema-PublishRequest"]').first.click()
    from playwright.sync_api import expect  # polls from Python: the page's CSP forbids eval

    expect(schema).to_have_attribute("open", "")  # a link to a schema opens it
    row = page.locator("#schema-PublishRequest tr", has_text="title")
    assert row.first.is_visible() and "1 to 500 characters" in row.first.text_content()
    page.goto(stack.base_url + "/docs")
    page.screenshot(path=str(SCREENSHOTS / "api-reference.png"))
    assert seen == {"foreign": [], "errors": []}


@pytest.mark.e2e
@pytest.mark.browser
def test_dashboard_upload_fills_the_title_from_the_files_title_element(stack, page, tmp_path):
    from playwright.sync_api import expect  # polls from Python: no eval under the dashboard's CSP

    seen = _watch(page, stack)
    sign_up(page, stack, "upload-title@example.com", "Title Co", "a long enough password 42")

    report = tmp_path / "q3.html"
    report.write_text("<!doctype html><html><head><title>Q3  &amp; Q4\n report</title>"
                      "<script>window.parent.pwned = 1</script></head><body><p>numbers</p></body></html>")
    page.goto(stack.base_url + "/dashboard/upload")
    title = page.locator("input[name=title]")
    page.set_input_files("input[name=file]", str(report))
    expect(title).not_to_have_value("")
    assert title.input_value() == "Q3 & Q4 report"
    assert page.evaluate("window.pwned") is None  # parsing the file ran nothing

    title.fill("Quarterly numbers")  # editable; choosing another file keeps what was typed
    untitled = tmp_path / "plain-notes.html"
    untitled.write_text("<p>no title element</p>")
    page.set_input_files("input[name=file]", str(untitled))
    assert title.input_value() == "Quarterly numbers"
    title.fill("")
    page.set_input_files("input[name=file]", str(report))
    expect(title).not_to_have_value("")
    page.set_input_files("input[name=file]", str(untitled))  # an auto-filled title follows the file
    expect(title).to_have_value("plain-notes")
    page.set_input_files("input[name=file]", str(report))
    expect(title).to_have_value("Q3 & Q4 report")
    page.click("button[type=submit] >> text=Publish")
    page.wait_for_url("**/dashboard/documents/**")
    assert "Q3 &amp; Q4 report" in page.content()
    assert seen == {"foreign": [], "errors": []}
