"""Every dashboard page, in real Chromium against the real local stack, signed in as an
owner, an editor and a viewer of one Pro workspace with data in every table (documents
of two versions, Markdown and a bundle, feedback with a reply, API keys, a connected
app, members and a pending invitation, activity, views, branding).

A free workspace's owner is checked at 390 px too (its usage meters).

- Issue 29 / 37: at 390 px (a phone) no page scrolls sideways: Members (400 px, the role
  menu cut to "ow", "Leave" outside), Workspace (391 px) and Activity (612 px) did.
- Issue 37: at 1280 px the members table is a styled list whose "Change" stays on one
  line, and the navigation stays one line with a long email (ellipsis + title).
- Issue 37: every page passes axe-core's WCAG 2.1 A/AA rules (tests/axe.py): every role's
  pages at 390 px, the owner's and the signed-out pages (and the steps between them) at
  1280 px.

(Was tests/browser/test_dashboard_mobile_browser.py, issue 29: the owner's pages only.)

One browser, one page per role and width reused for every path. Screenshots of the main
pages at 390 px and 1280 px go to $DOCPUB_SCREENSHOT_DIR/390/ and /1280/
(DOCPUB_SCREENSHOT_DIR=docs/screenshots refreshes the committed ones), else to a
temporary folder.
"""
from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import httpx
import pytest

from tests import axe
from tests.chromium import browser, confirm_sign_up, mail_link_in, sign_up  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

OWNER = "owner.with.a.rather.long.address@team-pages-example.com"  # long: the navigation must cope
EDITOR, VIEWER, PENDING = "editor@team-pages.example", "viewer@team-pages.example", "pending@team-pages.example"
PASSWORD = "a long team password 42"
WIDEST = """() => { const limit = document.documentElement.clientWidth; const wide = [];
  for (const el of document.querySelectorAll('body *')) {
    const box = el.getBoundingClientRect();
    if (box.width > 0 && box.right > limit + 1 && !el.closest('pre, .scroll, textarea')) {
      wide.push(`${el.tagName.toLowerCase()}.${el.className} (${Math.round(box.right)} px)`); } }
  return wide.slice(0, 5); }"""
SCREENSHOT_PAGES = ("documents", "document", "upload", "feedback", "keys", "members", "activity", "workspace",
                    "edit", "sign-in")
MISSING = "00000000-0000-4000-8000-000000000000"


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return Path(os.environ.get("DOCPUB_SCREENSHOT_DIR") or tmp_path_factory.mktemp("screenshots"))


def _zip(entries: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, text in entries.items():
            archive.writestr(name, text)
    return out.getvalue()


def _join(browser, stack, email: str) -> dict:
    """The invited person opens the mailed link, creates an account and joins: their session."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(mail_link_in(stack.data_dir, email, "invite"))
    page.fill("input[name=password]", PASSWORD)
    page.click("text=Create account and join")
    page.wait_for_url("**/dashboard/documents**")
    state = context.storage_state()
    context.close()
    return state


@pytest.fixture(scope="module")
def team(stack, browser):
    """{role: storage state} of the three members, and the main document's id."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    sign_up(page, stack, OWNER, "Team Pages", PASSWORD)
    page.fill("input[name=name]", "CI")
    page.click("text=Create key")
    key = page.locator("#new-key").inner_text().strip()
    with httpx.Client(base_url=stack.base_url, headers={"X-Api-Key": key}, timeout=30) as http:
        workspace_id = http.get("/api/v1/me").json()["workspace"]["id"]
        stack.admin("set-plan", workspace_id, "pro")
        title = "Quarterly release notes for the mobile and desktop apps"
        doc = http.post("/api/v1/publish", json={"title": title, "description": "What changed this quarter",
                                                 "html": "<h1>Release notes</h1><p>Exports are faster.</p>",
                                                 "note": "first draft"}).json()
        http.post("/api/v1/publish", json={"document_id": doc["document_id"], "note": "numbers",
                                           "html": "<h1>Release notes</h1><p>Exports are 3x faster.</p>"})
        http.post("/api/v1/publish", json={"format": "markdown", "html": "# Weekly report\n\n| a | b |\n|---|---|\n"})
        bundle = _zip({"index.html": "<title>Site</title><img src='img/chart.svg' alt='chart'>",
                       "img/chart.svg": "<svg xmlns='http://www.w3.org/2000/svg' width='4' height='4'/>"})
        http.post("/api/v1/publish", files={"file": ("site.zip", bundle, "application/zip")})
        share = doc["share_url"].rsplit("/d/", 1)[1]
        httpx.get(doc["share_url"], headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/120"})
        feedback = httpx.post(f"{stack.base_url}/d/{share}/feedback",
                              json={"message": "Can we say how much faster on which devices?", "name": "Kim",
                                    "quote": "faster"}).json()
        http.post(f"/api/v1/feedback/{feedback['feedback_id']}/replies",
                  json={"message": "Yes: 3x on every phone we tried."})
    for email, role in ((EDITOR, "editor"), (VIEWER, "viewer"), (PENDING, "viewer")):
        page.goto(stack.base_url + "/dashboard/members")
        page.fill("#invite input[name=email]", email)
        page.select_option("#invite select[name=role]", role)
        page.click("button[type=submit] >> text=Send invitation")
        page.locator("text=Invitation sent").wait_for()
    page.goto(stack.base_url + "/dashboard/keys")
    page.fill("input[name=name]", "nightly report job")
    page.click("text=Create key")
    page.locator("#new-key").wait_for()
    document_id = doc["document_id"]
    states = {"owner": (context.storage_state(), document_id), "editor": (_join(browser, stack, EDITOR), document_id),
              "viewer": (_join(browser, stack, VIEWER), document_id), "free owner": _free_owner(browser, stack)}
    stack.add_grant(workspace_id, "Claude (a connected app with a long name)", OWNER)
    page.goto(stack.base_url + "/dashboard/workspace")
    page.fill("input[name=brand_name]", "Team Pages Inc.")
    page.click("text=Save branding")
    page.locator("text=Branding saved").wait_for()
    context.close()
    return states


def _free_owner(browser, stack) -> tuple[dict, str]:
    """The owner of a free workspace (usage meters, Pro offers) with one document."""
    context = browser.new_context()
    page = context.new_page()
    sign_up(page, stack, "free-pages@example.com", "Free Pages", PASSWORD)
    page.fill("input[name=name]", "CI")
    page.click("text=Create key")
    key = page.locator("#new-key").inner_text().strip()
    with httpx.Client(base_url=stack.base_url, headers={"X-Api-Key": key}, timeout=30) as http:
        doc = http.post("/api/v1/publish", json={"html": "<h1>Free notes</h1>"}).json()
        http.post("/api/v1/publish", json={"document_id": doc["document_id"], "html": "<h1>Free notes</h1><p>2</p>"})
    state = context.storage_state()
    context.close()
    return state, doc["document_id"]


def dashboard_pages(document_id: str) -> dict[str, str]:
    doc = f"/dashboard/documents/{document_id}"
    return {"documents": "/dashboard/documents", "document": doc, "edit": f"{doc}/edit",
            "diff": f"{doc}/diff?from=1&to=2", "delete": f"{doc}/delete", "upload": "/dashboard/upload",
            "new-version": f"/dashboard/upload?document_id={document_id}", "feedback": "/dashboard/feedback",
            "keys": "/dashboard/keys", "apps": "/dashboard/apps", "members": "/dashboard/members",
            "activity": "/dashboard/activity", "workspace": "/dashboard/workspace", "account": "/dashboard/account",
            "shared": "/dashboard/shared",
            "missing": f"/dashboard/documents/{MISSING}"}


SIGNED_OUT_PAGES = {"sign-in": "/dashboard/sign-in", "sign-up": "/dashboard/sign-up", "forgot": "/dashboard/forgot",
                    "login": "/dashboard/login?token=not-a-token", "verify": "/dashboard/verify?token=not-a-token",
                    "reset": "/dashboard/reset?token=not-a-token",
                    "join": "/dashboard/join?token=not-a-token"}


def _visit(context, width: int, stack, pages: dict[str, str]):
    """Each (name, page) after opening it, one tab reused."""
    tab = context.new_page()
    tab.set_viewport_size({"width": width, "height": 844})
    for name, path in pages.items():
        tab.goto(stack.base_url + path)
        assert "/sign-in" not in tab.url or name in ("sign-in", "login"), f"{name}: not signed in"
        yield name, tab
    tab.close()


def _sideways(tab, width: int) -> str | None:
    scroll = tab.evaluate("document.documentElement.scrollWidth")
    wide = tab.evaluate(WIDEST)
    return None if scroll <= width and not wide else f"{scroll} px wide: {wide}"


@pytest.mark.parametrize("role", ["owner", "editor", "viewer", "free owner"])
def test_no_dashboard_page_scrolls_sideways_on_a_phone(stack, browser, team, shots, role):
    state, document_id = team[role]
    width = 390
    context = browser.new_context(storage_state=state)
    target = shots / str(width)
    target.mkdir(parents=True, exist_ok=True)
    found, inaccessible = {}, {}
    try:
        pages = dashboard_pages(document_id)
        for name, tab in _visit(context, width, stack, pages):
            if (wide := _sideways(tab, width)) is not None:
                found[pages[name]] = wide
            if problems := axe.violations(tab):
                inaccessible[pages[name]] = problems
            if role == "owner" and name in SCREENSHOT_PAGES:
                tab.screenshot(path=str(target / f"{name}.png"), full_page=True)
    finally:
        context.close()
    if role == "owner":
        anonymous = browser.new_context()
        try:
            for name, tab in _visit(anonymous, width, stack, SIGNED_OUT_PAGES):
                if (wide := _sideways(tab, width)) is not None:
                    found[SIGNED_OUT_PAGES[name]] = wide
                if name in SCREENSHOT_PAGES:
                    tab.screenshot(path=str(target / f"{name}.png"), full_page=True)
        finally:
            anonymous.close()
    assert not found, f"pages that scroll sideways at {width} px as {role}: {found}"
    assert not inaccessible, f"axe-core WCAG 2.1 AA violations as {role}: {inaccessible}"


def test_lists_stack_into_labelled_rows_on_a_phone(stack, browser, team):
    state, _ = team["owner"]
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


def test_every_page_at_1280_px_fits_passes_axe_and_keeps_its_lines(stack, browser, team, shots):
    """The owner's pages at 1280 px: none scrolls sideways, none has a WCAG 2.1 A/AA violation
    (axe-core); the navigation is one line with a long email (ellipsis, the full address in
    `title`); the members table is a styled list whose "Change" does not wrap."""
    state, document_id = team["owner"]
    width = 1280
    context = browser.new_context(storage_state=state)
    anonymous = browser.new_context()
    target = shots / str(width)
    target.mkdir(parents=True, exist_ok=True)
    wide, inaccessible = {}, {}
    try:
        for visits in (_visit(context, width, stack, dashboard_pages(document_id)),
                       _visit(anonymous, width, stack, SIGNED_OUT_PAGES)):
            for name, tab in visits:
                path = tab.url.replace(stack.base_url, "")
                if (found := _sideways(tab, width)) is not None:
                    wide[path] = found
                if problems := axe.violations(tab):
                    inaccessible[path] = problems
                if name in SCREENSHOT_PAGES:
                    tab.screenshot(path=str(target / f"{name}.png"), full_page=True)
                if name == "members":
                    _members_table_is_styled(tab)
                if name == "documents":
                    _navigation_is_one_line(tab)
        # The steps between pages: a refused form (its error) and "check your email".
        tab = anonymous.new_page()
        tab.goto(stack.base_url + "/dashboard/sign-up")
        tab.fill("input[name=email]", "steps-pages@example.com")
        tab.fill("input[name=password]", "password123")
        tab.fill("input[name=workspace_name]", "Steps")
        tab.click("button[type=submit] >> text=Create workspace")
        tab.locator(".error").wait_for()
        if problems := axe.violations(tab):
            inaccessible["sign-up refused"] = problems
        tab.fill("input[name=password]", PASSWORD)
        tab.click("button[type=submit] >> text=Create workspace")
        tab.locator("text=Check your email").wait_for()
        if problems := axe.violations(tab):
            inaccessible["check your email"] = problems
    finally:
        context.close()
        anonymous.close()
    assert not wide, f"pages that scroll sideways at {width} px: {wide}"
    assert not inaccessible, "axe-core WCAG 2.1 AA violations:\n" + "\n".join(
        f"{path}:\n  " + "\n  ".join(problems) for path, problems in inaccessible.items())


def _navigation_is_one_line(tab) -> None:
    tops = tab.eval_on_selector_all("header.top nav a", "els => els.map(e => Math.round(e.getBoundingClientRect().top))")
    assert len(set(tops)) == 1, f"the navigation wraps to {len(set(tops))} lines: {tops}"
    who = tab.locator(".who")
    assert who.get_attribute("title") and OWNER in who.get_attribute("title")
    header = tab.locator("header.top").bounding_box()
    assert header["height"] < 60, f"the header is {header['height']} px high (two lines?)"


def _members_table_is_styled(tab) -> None:
    table = tab.locator("table.members")
    assert "list" in (table.get_attribute("class") or ""), "the members table has no list style"
    row = tab.locator(f"tr[data-member='{EDITOR}']")
    select, change = row.locator("select[name=role]").bounding_box(), row.locator("text=Change").bounding_box()
    assert change["height"] < 30, f"'Change' wraps ({change['height']} px high)"
    assert abs((select["y"] + select["height"] / 2) - (change["y"] + change["height"] / 2)) < 12, \
        "'Change' is not beside the role menu"
