"""View beacon in real Chromium against the real local stack: one count per page load."""
from __future__ import annotations

from urllib.parse import urlparse

import pytest

from tests.chromium import ARGS, CHROMIUM, browser  # noqa: F401  (browser: a fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

DESKTOP_CHROME = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
                  "Chrome/131.0.0.0 Safari/537.36")


@pytest.fixture(scope="module")
def key(stack):
    """A workspace of its own (the shared dev workspace's free cap belongs to other tests)."""
    return stack.admin("create-workspace", "--name", "Views browser", "--plan", "pro")["api_key"]


def _publish(stack, key, title):
    with stack.client(key) as http:
        r = http.post("/api/v1/publish", json={"title": title, "html": f"<h1>{title}</h1><p>Read me.</p>"})
        assert r.status_code == 200, r.text
        return r.json()


def _stats(stack, key, document_id):
    with stack.client(key) as http:
        r = http.get(f"/api/v1/documents/{document_id}/stats", params={"days": 1})
        assert r.status_code == 200, r.text
        return r.json()


def _beacons(page) -> list:
    sent = []
    page.on("request", lambda request: sent.append(request) if urlparse(request.url).path.endswith("/view")
            else None)
    return sent


def test_each_page_load_counts_once(stack, browser, key):
    doc = _publish(stack, key, "Counted once per load")
    context = browser.new_context(user_agent=DESKTOP_CHROME)
    context.set_default_timeout(15_000)
    page = context.new_page()
    sent = _beacons(page)
    try:
        with page.expect_response(lambda r: urlparse(r.url).path.endswith("/view")) as first:
            page.goto(doc["share_url"])
        assert first.value.status == 204
        assert first.value.request.method == "POST"
        # The page becoming visible again, focus, selecting text: no second count for this load.
        page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
        page.frame_locator("#doc").locator("h1").click()
        page.locator("#fb-open").click()
        with page.expect_response(lambda r: urlparse(r.url).path.endswith("/view")) as second:
            page.reload()
        assert second.value.status == 204
        assert len(sent) == 2, [r.url for r in sent]  # one per load, nothing in between
        assert all("dp_" not in (r.headers.get("cookie") or "") for r in sent)
        stats = _stats(stack, key, doc["document_id"])
        assert stats["views_total"] == 2
        assert stats["days"][-1]["views"] == 2
        assert stats["versions"] == [{"version_id": doc["version_id"], "views": 2}]
        assert context.cookies() == []  # counting set no cookie
    finally:
        context.close()


def test_headless_browser_is_not_counted(stack, browser, key):
    doc = _publish(stack, key, "Robots do not count")
    context = browser.new_context()  # Playwright's default: a HeadlessChrome User-Agent
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        assert "HeadlessChrome" in page.evaluate("navigator.userAgent")
        with page.expect_response(lambda r: urlparse(r.url).path.endswith("/view")) as beacon:
            page.goto(doc["share_url"])
        assert beacon.value.status == 204  # answered like any beacon, but not counted
        assert _stats(stack, key, doc["document_id"])["views_total"] == 0
    finally:
        context.close()
