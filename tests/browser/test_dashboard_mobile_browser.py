"""Issue 29, item 6: the dashboard on a phone. At 390 px (an iPhone's CSS width) no
dashboard page scrolls sideways (they were 557-615 px wide); lists stack one row per
block. Real Chromium against the real local stack, with a document of two versions,
feedback and a Pro workspace, so every section of every page is drawn.

Screenshots of the main pages at 390 px and 1280 px go to
$DOCPUB_SCREENSHOT_DIR/390/ and /1280/ (DOCPUB_SCREENSHOT_DIR=docs/screenshots
refreshes the committed ones), else to a temporary folder.
"""
from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from tests.chromium import browser, confirm_sign_up  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

WIDEST = """() => { const limit = document.documentElement.clientWidth; const wide = [];
  for (const el of document.querySelectorAll('body *')) {
    const box = el.getBoundingClientRect();
    if (box.width > 0 && box.right > limit + 1 && !el.closest('pre, .scroll, textarea')) {
      wide.push(`${el.tagName.toLowerCase()}.${el.className} (${Math.round(box.right)} px)`); } }
  return wide.slice(0, 5); }"""
SCREENSHOT_PAGES = ("documents", "document", "upload", "feedback", "keys", "workspace", "edit", "sign-in")


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return Path(os.environ.get("DOCPUB_SCREENSHOT_DIR") or tmp_path_factory.mktemp("screenshots"))


@pytest.fixture(scope="module")
def signed_in(stack, browser):
    """A Pro workspace with one document (2 versions, feedback), and its session's cookies."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(stack.base_url + "/dashboard/sign-up")
    page.fill("input[name=email]", "phone@example.com")
    page.fill("input[name=password]", "a long phone password 42")
    page.fill("input[name=workspace_name]", "Phone Co")
    page.click("button[type=submit] >> text=Create workspace")
    confirm_sign_up(page, stack.data_dir, "phone@example.com")
    page.fill("input[name=name]", "CI")
    page.click("text=Create key")
    key = page.locator("#new-key").inner_text().strip()
    with httpx.Client(base_url=stack.base_url, headers={"X-Api-Key": key}, timeout=30) as http:
        title = "Quarterly release notes for the mobile and desktop apps"
        doc = http.post("/api/v1/publish", json={"title": title, "description": "What changed this quarter",
                                                 "html": "<h1>Release notes</h1><p>Exports are faster.</p>",
                                                 "note": "first draft"}).json()
        http.post("/api/v1/publish", json={"document_id": doc["document_id"], "title": title, "note": "numbers",
                                           "html": "<h1>Release notes</h1><p>Exports are 3x faster.</p>"})
        workspace_id = http.get("/api/v1/me").json()["workspace"]["id"]
    share = doc["share_url"].rsplit("/d/", 1)[1]
    httpx.post(f"{stack.base_url}/d/{share}/feedback",
               json={"message": "Can we say how much faster on which devices?", "name": "Kim", "quote": "faster"})
    stack.admin("set-plan", workspace_id, "pro")
    state = context.storage_state()
    context.close()
    return state, doc["document_id"]


def _pages(document_id: str) -> dict[str, str]:
    doc = f"/dashboard/documents/{document_id}"
    return {"documents": "/dashboard/documents", "document": doc, "edit": f"{doc}/edit",
            "diff": f"{doc}/diff?from=1&to=2", "delete": f"{doc}/delete", "upload": "/dashboard/upload",
            "feedback": "/dashboard/feedback", "keys": "/dashboard/keys", "apps": "/dashboard/apps",
            "workspace": "/dashboard/workspace", "account": "/dashboard/account"}


@pytest.mark.parametrize("width", [390, 1280])
def test_no_dashboard_page_scrolls_sideways(stack, browser, signed_in, shots, width):
    state, document_id = signed_in
    signed = browser.new_context(viewport={"width": width, "height": 844}, storage_state=state)
    anonymous = browser.new_context(viewport={"width": width, "height": 844})
    target = shots / str(width)
    target.mkdir(parents=True, exist_ok=True)
    try:
        pages = [(signed, name, path) for name, path in _pages(document_id).items()]
        pages += [(anonymous, "sign-in", "/dashboard/sign-in"), (anonymous, "sign-up", "/dashboard/sign-up")]
        for context, name, path in pages:
            page = context.new_page()
            page.goto(stack.base_url + path)
            assert "/sign-in" not in page.url or name == "sign-in", f"{name}: not signed in"
            wide = page.evaluate(WIDEST)
            assert page.evaluate("document.documentElement.scrollWidth") <= width and not wide, \
                f"{path} scrolls sideways at {width} px: {wide}"
            if name in SCREENSHOT_PAGES:
                page.screenshot(path=str(target / f"{name}.png"), full_page=True)
            page.close()
    finally:
        signed.close()
        anonymous.close()


def test_lists_stack_into_labelled_rows_on_a_phone(stack, browser, signed_in):
    state, document_id = signed_in
    context = browser.new_context(viewport={"width": 390, "height": 844}, storage_state=state)
    try:
        page = context.new_page()
        page.goto(stack.base_url + "/dashboard/documents")
        assert not page.locator("table.list thead").is_visible()
        row = page.locator("table.list tbody tr").first
        cells = row.locator("td")
        first, second = cells.nth(0).bounding_box(), cells.nth(1).bounding_box()
        assert second["y"] >= first["y"] + first["height"] - 1, "cells stack, one under the other"
        assert "Versions" in page.locator("td[data-label=Versions]").first.evaluate(
            "el => getComputedStyle(el, '::before').content")
        page.set_viewport_size({"width": 1280, "height": 844})
        assert page.locator("table.list thead").is_visible()
    finally:
        context.close()
