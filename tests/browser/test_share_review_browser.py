"""Reviews on the share page in real Chromium (contract 7e): a review request mails a
member the link; they open it (the Review panel opens), sign in through the panel's link,
come back with a pass for that link, and approve; an agent waiting on the reviews (REST
`wait`, in a thread) wakes with `approved`."""
from __future__ import annotations

import threading

import httpx
import pytest

from tests.chromium import browser, mail_link_in  # noqa: F401  (browser: a fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

REVIEWER = "share-reviewer@example.com"


def test_a_member_approves_on_the_share_page_and_the_agent_wakes(stack, browser):  # noqa: F811
    created = stack.admin("create-workspace", "--name", "Share reviews", "--plan", "pro")
    stack.add_member(created["workspace_id"], REVIEWER, role="owner")
    api = httpx.Client(base_url=stack.base_url, headers={"X-Api-Key": created["api_key"]}, timeout=60)
    doc = api.post("/api/v1/publish", json={"title": "Pricing", "html": "<h1>Pricing</h1><p>Ten euros.</p>"}).json()
    reviews = f"/api/v1/documents/{doc['document_id']}/reviews"
    asked = api.post(f"/api/v1/documents/{doc['document_id']}/review-requests", json={"reviewers": [REVIEWER]})
    assert asked.status_code == 202, asked.text
    since = api.get(reviews).json()["since"]
    woke: dict = {}
    agent = threading.Thread(target=lambda: woke.update(api.get(reviews, params={"since": since, "wait": 25}).json()))
    agent.start()

    context = browser.new_context()
    context.set_default_timeout(20_000)
    page = context.new_page()
    try:
        # The member is signed in to the dashboard (a one-time link, as `make admin login-link` gives).
        page.goto(stack.admin("login-link", created["workspace_id"])["login_url"])
        page.click("button[type=submit]")
        page.wait_for_url("**/dashboard/**")
        # The mailed link opens the share page with its Review panel.
        link = mail_link_in(stack.data_dir, REVIEWER, "review")
        assert link.startswith(doc["share_url"]) and link.endswith("#review")
        page.goto(link)
        panel = page.locator("#rvw")
        panel.locator("#rvw-state", has_text="Waiting for a review.").wait_for()
        panel.locator("a", has_text="Sign in to review").click()  # a pass for this link, then back
        page.locator("#rvw-who", has_text=f"as {REVIEWER}").wait_for()
        page.fill("#rvw-message", "Reads well.")
        page.click("#rvw-form button[value=approved]")
        page.locator("#rvw-status", has_text="you approved this version").wait_for()
        page.locator("#rvw-state", has_text="Approved.").wait_for()
    finally:
        context.close()
    agent.join(30)
    assert woke["review_state"] == "approved"
    [review] = woke["reviews"]
    assert review["decision"] == "approved" and review["message"] == "Reads well."
    assert review["reviewer"] == {"kind": "member", "id": REVIEWER, "name": REVIEWER, "email": REVIEWER}
    assert api.get(f"/api/v1/documents/{doc['document_id']}").json()["review_state"] == "approved"
