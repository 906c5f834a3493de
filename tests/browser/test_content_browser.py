"""A bundle's image and stylesheet load through the share link in real Chromium,
served from the content origin (the local stack's default), sandboxed; also for a
protected document once unlocked (the content origin never sees the unlock cookie:
the grant travels in the version segment). Real stack, real browser."""
from __future__ import annotations

import base64
import io

import pytest

from tests.chromium import ARGS, CHROMIUM, browser  # noqa: F401  (browser: a fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

PAGE = """<!doctype html><html><head><title>Chart report</title>
<link rel="stylesheet" href="./css/style.css"></head>
<body><h1 id="heading">Quarterly chart</h1><img id="chart" src="img/chart.png" alt="chart">
<p><a id="sub" href="sub/page.html">more</a></p></body></html>"""
CSS = "#heading { color: rgb(200, 30, 30); }"


def _png(width: int = 40, height: int = 20) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(out, format="PNG")
    return out.getvalue()


FILES = [{"path": "img/chart.png", "content": base64.b64encode(_png()).decode(), "encoding": "base64"},
         {"path": "css/style.css", "content": CSS},
         {"path": "sub/page.html", "content": "<p id=deep>Second page</p>"}]


@pytest.fixture
def page(browser):
    context = browser.new_context()
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def _publish(stack, key, **body):
    with stack.client(key) as http:
        r = http.post("/api/v1/publish", json={"html": PAGE, "files": FILES, **body})
        assert r.status_code == 200, r.text
        return r.json()


def _assert_bundle_loads(page):
    frame = page.frame_locator("#doc")
    frame.locator("#heading").wait_for()
    assert frame.locator("#heading").evaluate("el => getComputedStyle(el).color") == "rgb(200, 30, 30)"
    frame.locator("#chart").evaluate("el => el.complete || new Promise(r => el.onload = r)")
    assert frame.locator("#chart").evaluate("el => [el.naturalWidth, el.naturalHeight]") == [40, 20]
    content = next(f for f in page.frames if "/v/" in f.url)
    assert content.evaluate("self.origin") == "null"  # sandboxed like any document
    return content


def test_a_bundles_image_and_stylesheet_load_through_the_share_link(stack, page):
    key = stack.admin("create-workspace", "--name", "Bundle browser", "--plan", "free")["api_key"]
    doc = _publish(stack, key)
    page.goto(doc["share_url"])
    assert page.title() == "Chart report"  # inferred from <title>
    content = _assert_bundle_loads(page)
    assert content.url.endswith(f"/v/{doc['version_id']}/index.html")
    assert content.url.startswith("http://localhost:")  # the separate content origin
    # A relative link to another page of the bundle works too.
    page.frame_locator("#doc").locator("#sub").click()
    page.frame_locator("#doc").locator("#deep").wait_for()


def test_a_protected_bundle_loads_its_files_once_unlocked(stack, page):
    key = stack.admin("create-workspace", "--name", "Bundle browser pro", "--plan", "pro")["api_key"]
    doc = _publish(stack, key, title="Locked chart")
    with stack.client(key) as http:
        r = http.put(f"/api/v1/documents/{doc['document_id']}/passphrase", json={"passphrase": "open sesame!"})
        assert r.status_code == 204, r.text
    page.goto(doc["share_url"])
    page.fill("input[name=passphrase]", "open sesame!")
    with page.expect_navigation():
        page.click("button[type=submit]")
    _assert_bundle_loads(page)
