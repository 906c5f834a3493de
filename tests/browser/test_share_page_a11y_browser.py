"""The share page for people who use a keyboard, a screen reader or a phone (issue 37).

- axe-core's WCAG 2.1 A/AA rules find no violation on the share page with comments (a
  thread with a reply, a suggested change, the comments beside the page and the feedback
  form open; the "Verified" line, closed and open), on the passphrase step (and its refusal), on a recipients link's email and
  code steps (and a wrong code; issue 35), on a link that is off, and on the landing page.
- Keyboard only: Tab into the document, select a passage with the keyboard, comment on
  it, then reply to the thread, never touching the mouse.
- At desktop width the open comments are listed beside the page (contract 7c), not folded
  behind "Comments 1"; on a phone the open feedback form does not cover the Feedback button.

Screenshots of the share page with comments at 1280 px and 390 px go to
$DOCPUB_SCREENSHOT_DIR/1280/share.png and /390/share.png (docs/screenshots refreshes them).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import axe
from tests.chromium import browser  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

PAGE = ("<!doctype html><html lang=en><title>Launch plan</title><h1>Launch plan</h1>"
        "<p id=plan>We ship the pricing page in March. Then we rest.</p>"
        "<p id=other>Support hours stay the same.</p></html>")


@pytest.fixture(scope="module")
def shared(stack):
    """A Pro workspace's document with a comment (and its reply) and a suggested change,
    and a passphrase-protected one."""
    key = stack.admin("create-workspace", "--name", "Share a11y", "--plan", "pro")["api_key"]
    with stack.client(key) as http:
        doc = http.post("/api/v1/publish", json={"html": PAGE}).json()
        share = doc["share_url"].rsplit("/d/", 1)[1]
        comment = http.post(f"/d/{share}/feedback", json={
            "message": "Can we say which March week?", "name": "Kim",
            "anchor": {"quote": "in March", "prefix": "We ship the pricing page ", "suffix": ". Then we rest."}}).json()
        http.post(f"/api/v1/feedback/{comment['feedback_id']}/replies", json={"message": "The second week."})
        http.post(f"/d/{share}/feedback", json={
            "message": "Friendlier", "anchor": {"quote": "stay the same", "prefix": "Support hours ", "suffix": "."},
            "suggestion": {"replacement": "do not change"}})
        locked = http.post("/api/v1/publish", json={"title": "Locked", "html": "<p>secret</p>"}).json()
        assert http.put(f"/api/v1/documents/{locked['document_id']}/passphrase",
                        json={"passphrase": "correct horse"}).status_code in (200, 204)
        only = http.post("/api/v1/publish", json={"title": "Some people", "html": "<p>only</p>",
                                                  "share_access": "recipients",
                                                  "share_recipients": ["a11y@client.example"]}).json()
        off = http.post("/api/v1/publish", json={"title": "Off", "html": "<p>off</p>"}).json()
        http.patch(f"/api/v1/documents/{off['document_id']}", json={"share_enabled": False})
    return {"doc": doc, "comment": comment["feedback_id"], "locked": locked["share_url"], "off": off["share_url"],
            "recipients": only["share_url"]}


def _shot(page, width: int) -> None:
    folder = os.environ.get("DOCPUB_SCREENSHOT_DIR")
    if folder:
        (Path(folder) / str(width)).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / str(width) / "share.png"))


def _threads_listed(page) -> None:
    page.locator("#rv-threads .thread").nth(1).wait_for()
    page.frame_locator("#doc").locator("mark[data-docpub-id]").first.wait_for()


def test_comments_are_listed_beside_the_page_at_desktop_width(stack, browser, shared):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(shared["doc"]["share_url"])
        _threads_listed(page)
        assert page.locator("#rv").is_visible(), "the comments are folded behind 'Comments 2'"
        assert page.locator("#rv-toggle").get_attribute("aria-expanded") == "true"
        _shot(page, 1280)
        page.click("#rv-close")  # the reader may still fold them
        assert not page.locator("#rv").is_visible()
    finally:
        context.close()


def _covered(page, selector: str) -> bool:
    return page.eval_on_selector(selector, """el => { const b = el.getBoundingClientRect();
        const hit = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
        return !(hit === el || el.contains(hit)); }""")


def test_on_a_phone_the_open_forms_leave_the_feedback_button_free(stack, browser, shared):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        page = context.new_page()
        page.goto(shared["doc"]["share_url"])
        page.locator("#rv-count", has_text="2").wait_for()
        page.click("#fb-open")
        assert page.locator("#fb").is_visible()
        assert not _covered(page, "#fb-open"), "the feedback form covers the Feedback button"
        page.click("#fb-cancel")
        page.click("#rv-toggle")
        page.locator(f"#t-{shared['comment']}").wait_for()
        assert not _covered(page, "#fb-open"), "the comments sheet covers the Feedback button"
        _shot(page, 390)
        page.click("#fb-open")
        assert not _covered(page, "#fb-open") and not _covered(page, "#fb-form button[type=submit]")
        for path in ("/", "/docs"):  # the landing page and the API reference fit a phone too
            page.goto(stack.base_url + path)
            assert page.evaluate("document.documentElement.scrollWidth") <= 390, f"{path} scrolls sideways"
    finally:
        context.close()


def test_the_share_pages_pass_axe(stack, browser, shared):
    problems = {}
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    phone = browser.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        page.goto(stack.base_url + "/")
        problems["landing"] = axe.violations(page)
        page.goto(stack.base_url + "/docs")
        problems["API reference"] = axe.violations(page)
        page.goto(shared["doc"]["share_url"])
        _threads_listed(page)
        page.locator("#pv details.verified").wait_for()  # the "Verified" line (contract 7g), put in by page.js
        problems["share page, comments beside it"] = axe.violations(page)
        page.click("#pv summary")
        assert page.locator("#pv details.verified").get_attribute("open") is not None
        problems["share page, Verified line open"] = axe.violations(page)
        page.click("#pv summary")
        page.click("#fb-open")
        problems["share page, feedback form open"] = axe.violations(page)
        page.click("#fb-cancel")
        page.click("#rvw-open")
        page.locator("#rvw-sign-in, #rvw-form").first.wait_for()
        problems["share page, review panel open"] = axe.violations(page)
        page.goto(shared["locked"])
        problems["passphrase step"] = axe.violations(page)
        page.fill("#passphrase", "wrong horse")
        page.click("button[type=submit]")
        page.locator(".error").wait_for()
        problems["passphrase refused"] = axe.violations(page)
        page.goto(shared["off"])
        problems["link turned off"] = axe.violations(page)
        for where, tab in (("", page), (" on a phone", phone.new_page())):
            tab.goto(shared["recipients"])
            problems["recipients link, email step" + where] = axe.violations(tab)
            tab.fill("#email", "not an address@")
            tab.evaluate("document.querySelector('form').noValidate = true")
            tab.click("button[type=submit]")
            tab.locator(".error").wait_for()
            problems["recipients link, email refused" + where] = axe.violations(tab)
            tab.fill("#email", "a11y@client.example")
            tab.click("button[type=submit]")
            tab.locator("#code").wait_for()
            problems["recipients link, code step" + where] = axe.violations(tab)
            tab.fill("#code", "000000")
            tab.click("button[type=submit] >> text=Open the document")
            tab.locator(".error").wait_for()
            problems["recipients link, wrong code" + where] = axe.violations(tab)
        small = phone.new_page()
        small.goto(shared["doc"]["share_url"])
        small.locator("#rv-count", has_text="2").wait_for()
        small.click("#rv-toggle")
        small.locator(f"#t-{shared['comment']}").wait_for()
        problems["share page on a phone, comments open"] = axe.violations(small)
    finally:
        context.close()
        phone.close()
    problems = {where: found for where, found in problems.items() if found}
    assert not problems, "axe-core WCAG 2.1 AA violations:\n" + "\n".join(
        f"{where}:\n  " + "\n  ".join(found) for where, found in problems.items())


def test_keyboard_only_select_comment_and_reply(stack, browser, shared):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(shared["doc"]["share_url"])
        _threads_listed(page)
        keys = page.keyboard
        # Tab until the document (the frame) has the focus.
        seen = []
        for _ in range(40):
            keys.press("Tab")
            seen.append(page.evaluate("document.activeElement && (document.activeElement.id || document.activeElement.tagName)"))
            if seen[-1] == "doc":
                break
        else:
            raise AssertionError(f"Tab never reaches the document: {seen}")
        frame = page.frame_locator("#doc")
        # Select with the keyboard: everything, then shrink it from the end word by word.
        keys.press("Control+a")
        for _ in range(6):
            keys.press("Shift+Control+ArrowLeft")
        selected = frame.locator("body").evaluate("() => getSelection().toString()")
        assert selected.strip(), "no keyboard selection"
        page.locator("#fb-open", has_text="Feedback on selection").wait_for()
        # Back to the page: Tab to the Feedback button and press it.
        for _ in range(40):
            keys.press("Tab")
            if page.evaluate("document.activeElement && document.activeElement.id") == "fb-open":
                break
        else:
            raise AssertionError("Tab never reaches the Feedback button")
        keys.press("Enter")
        assert page.evaluate("document.activeElement.id") == "fb-message"
        keys.type("Typed without a mouse.")
        keys.press("Tab")  # the quoted text, prefilled from the selection
        quoted = page.evaluate("document.activeElement.value")
        assert "We ship the pricing page" in quoted and "Support" in quoted, quoted
        keys.press("Tab")
        keys.type("Kai")
        keys.press("Tab")  # Close
        keys.press("Tab")  # Send
        keys.press("Enter")
        page.locator("#fb-status", has_text="Thank you").wait_for()
        new_id = page.locator("#fb-status").get_attribute("data-feedback-id")
        card = page.locator(f"#t-{new_id}")
        card.wait_for()
        # Reply from the keyboard: Tab reaches the thread's reply box.
        for _ in range(60):
            keys.press("Tab")
            if page.evaluate(f"document.activeElement.closest('#t-{new_id}') !== null"):
                break
        else:
            raise AssertionError("Tab never reaches the new thread's reply box")
        assert page.evaluate("document.activeElement.tagName") == "TEXTAREA"
        keys.type("A reply, also from the keyboard.")
        keys.press("Tab")
        keys.press("Enter")
        card.locator(".replies", has_text="A reply, also from the keyboard.").wait_for()
    finally:
        context.close()
