"""The dashboard in a real browser (Playwright driving Debian chromium) against the
real local stack: sign up → create a key → publish with that key over HTTP → see
the document → (Pro) edit it → view the diff → set a passphrase → open the share
link in a fresh browser context, unlock, leave feedback → resolve it in the dashboard.

Screenshots of each main page go to $DOCPUB_SCREENSHOT_DIR (docs/screenshots when
refreshing the README's images), else to a temporary folder.
"""
from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from urllib.parse import urlparse

import httpx
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
PASSWORD = "a long browser password"
PASSPHRASE = "violet otter 42"
HTML_V1 = """<!doctype html>
<html><head><meta charset="utf-8"><title>Release notes</title></head>
<body>
<h1>Release notes 1.4</h1>
<p>This release adds faster exports.</p>
<ul>
<li>Exports are 3x faster</li>
<li>New dark theme</li>
</ul>
</body></html>
"""


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield launched
        launched.close()


@pytest.fixture
def shots(tmp_path):
    target = Path(os.environ.get("DOCPUB_SCREENSHOT_DIR") or tmp_path / "screenshots")
    target.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> None:
        page.screenshot(path=str(target / f"{name}.png"), full_page=True)

    take.dir = target
    return take


def test_dashboard_end_to_end_in_chromium(stack, browser, shots):
    base = stack.base_url
    owner = browser.new_context(viewport={"width": 1280, "height": 800})
    page = owner.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)

    # Sign up: a free workspace with this person as owner.
    page.goto(base + "/dashboard/sign-up")
    page.fill("input[name=email]", "browser@example.com")
    page.fill("input[name=password]", PASSWORD)
    page.fill("input[name=workspace_name]", "Browser Co")
    shots(page, "sign-up")
    page.click("button[type=submit] >> text=Create workspace")
    from tests.chromium import confirm_sign_up

    confirm_sign_up(page, stack.data_dir, "browser@example.com")
    assert page.locator("text=Email confirmed").is_visible()

    # Create a key: shown once, with a working copy button (JS enhancement).
    page.fill("input[name=name]", "CI")
    page.click("text=Create key")
    key = page.locator("#new-key").inner_text().strip()
    assert key.startswith("dpk_")
    copy = page.locator(".newkey button.copy")
    assert copy.is_visible()
    shots(page, "api-keys")

    # Publish with that key over HTTP.
    with httpx.Client(base_url=base, headers={"X-Api-Key": key}, timeout=30) as http:
        r = http.post("/api/v1/publish", json={"title": "Release notes", "html": HTML_V1, "note": "first draft",
                                               "description": "What changed in 1.4"})
        assert r.status_code == 200, r.text
        document_id = r.json()["document_id"]
        share_url = r.json()["share_url"]

    # See it in the dashboard.
    page.goto(base + "/dashboard/documents")
    assert page.locator(f"a[href='/dashboard/documents/{document_id}']").inner_text() == "Release notes"
    shots(page, "documents")

    # Free plan: editing is a Pro feature. The operator makes the workspace Pro.
    page.goto(base + "/dashboard/workspace")
    workspace_id = page.locator("code", has_text="ws_").first.inner_text()
    shots(page, "workspace-free")
    assert stack.admin("set-plan", workspace_id, "pro")["plan"] == "pro"

    # Edit on Pro: save as version 2 with a note.
    page.goto(base + f"/dashboard/documents/{document_id}/edit")
    editor = page.locator("textarea[name=html]")
    html = editor.input_value()
    assert html == HTML_V1
    editor.fill(html.replace("3x faster", "4x faster").replace("<li>New dark theme</li>",
                                                               "<li>New dark theme</li>\n<li>Keyboard shortcuts</li>"))
    assert page.locator("[data-size-for=html]").is_visible()  # live size counter
    page.fill("input[name=note]", "Correct the export speed")
    shots(page, "edit")
    page.click("text=Save as version 2")
    page.wait_for_url(re.compile(rf"/dashboard/documents/{document_id}\?m=published"))

    # The diff between versions 1 and 2.
    page.click("a:has-text('Changes')")
    page.wait_for_url(re.compile(r"/diff\?"))
    assert page.locator("tr.added", has_text="4x faster").count() == 1
    assert page.locator("tr.removed", has_text="3x faster").count() == 1
    assert page.locator("tr.added", has_text="Keyboard shortcuts").count() == 1
    shots(page, "diff")

    sharing = _has("chalicelib.services.sharing")
    feedback = _has("chalicelib.services.feedback")
    page.goto(base + f"/dashboard/documents/{document_id}")
    if sharing:
        page.fill("input[name=passphrase]", PASSPHRASE)
        page.click("text=Set passphrase")
        page.wait_for_url(re.compile(r"m=passphrase-set"))
        assert page.locator(".badge", has_text="passphrase").is_visible()
    shots(page, "document")

    if sharing and feedback:
        # A viewer, in a fresh context: unlock, then leave feedback.
        viewer_context = browser.new_context(viewport={"width": 1280, "height": 800})
        viewer = viewer_context.new_page()
        viewer.goto(share_url)
        assert "Release notes 1.4" not in viewer.content()
        viewer.fill("input[name=passphrase]", PASSPHRASE)
        viewer.locator("input[name=passphrase]").press("Enter")
        viewer.wait_for_selector("iframe")
        shots(viewer, "share-unlocked")
        form = viewer.locator("#fb-form")
        if form.count() and not form.is_visible():
            viewer.get_by_role("button", name=re.compile("feedback", re.I)).first.click()
        if form.count() and form.is_visible():
            form.locator("[name=message]").fill("The 4x claim needs a benchmark link.")
            form.locator("[name=name]").fill("Reviewer")
            with viewer.expect_response(lambda r: urlparse(r.url).path.endswith("/feedback") and r.request.method == "POST") as sent:
                form.locator("button[type=submit]").click()
            assert sent.value.status == 201
        else:  # no feedback form in this share page: post it as the page's form would
            r = viewer_context.request.post(share_url + "/feedback",
                                            form={"message": "The 4x claim needs a benchmark link.",
                                                  "name": "Reviewer"})
            assert r.status == 201
        viewer_context.close()

        # Resolve it in the dashboard.
        page.goto(base + "/dashboard/feedback")
        item = page.locator("article.feedback", has_text="The 4x claim needs a benchmark link.")
        assert item.count() == 1
        assert item.locator("a", has_text="version 2").count() == 1
        shots(page, "feedback")
        item.locator("button", has_text="Resolve").click()
        page.wait_for_url(re.compile(r"m=resolved"))
        assert page.locator("article.feedback", has_text="benchmark link").count() == 0
        page.goto(base + "/dashboard/feedback?status=resolved")
        assert page.locator("article.feedback.resolved", has_text="benchmark link").count() == 1

    page.goto(base + "/dashboard/workspace")
    shots(page, "workspace-pro")
    assert errors == [], errors  # no CSP violations or script errors
    owner.close()
