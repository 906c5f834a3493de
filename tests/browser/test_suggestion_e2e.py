"""Suggested edits end to end (issue 34): a reviewer in Chromium selects text and
suggests a change; the agent (the official MCP client) waits for the review loop
(wait_for_review), sees the suggestion, accepts it; the open page shows the tracked
change, then the new version with the thread "Accepted in version 2"; then the reviewer
(a member, signed in) approves on the share page and the agent's wait returns `approved`."""
from __future__ import annotations

import asyncio
import json
import threading
import urllib.request

import pytest

from tests.chromium import browser  # noqa: F401  (a fixture)
from tests.mcp_agent import McpAgent, select_text
from tests.stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

QUOTE = "two minutes"
REVIEWER = "rita@example.com"
HTML = ("<h1>Runbook</h1><p id=intro>Read this first.</p>"
        f"<p id=failover>The database failover takes {QUOTE} at most.</p><p>Restart the worker after it.</p>")


@pytest.fixture(scope="module")
def live_stack(tmp_path_factory):
    stack = LocalStack(tmp_path_factory.mktemp("suggest") / "data",
                       env={"DOCPUB_LIVE_POLL_SECONDS": "2"}).start()
    yield stack
    stack.stop()


class Agent(McpAgent):
    def __init__(self, stack, key):
        self.change_seen = threading.Event()
        super().__init__(stack, key)

    async def script(self, call):
        published = await call("publish_document", {"title": "Runbook", "html": HTML})
        doc_id = published["document_id"]
        since = (await call("wait_for_review", {"document_id": doc_id, "timeout_seconds": 0}))["since"]
        self.out.put(published)
        woke = await call("wait_for_review", {"document_id": doc_id, "since": since, "timeout_seconds": 25})
        self.out.put(woke)
        await asyncio.to_thread(self.change_seen.wait, 60)
        [item] = woke["feedback"]
        self.out.put(await call("accept_suggestion", {"feedback_id": item["feedback_id"]}))
        decision = await call("wait_for_review", {"document_id": doc_id, "since": woke["since"],
                                                  "timeout_seconds": 25})
        while not decision["reviews"]:  # woken by the acceptance's own activity: wait on
            decision = await call("wait_for_review", {"document_id": doc_id, "since": decision["since"],
                                                      "timeout_seconds": 25})
        self.out.put(decision)


def test_reviewer_suggests_agent_accepts_reviewer_approves(live_stack, browser):  # noqa: F811
    created = live_stack.admin("create-workspace", "--name", "Suggest", "--plan", "pro")
    live_stack.add_member(created["workspace_id"], REVIEWER, role="owner")
    agent = Agent(live_stack, created["api_key"])
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        # The reviewer is signed in to the dashboard (a one-time link, as `make admin login-link` gives).
        page.goto(live_stack.admin("login-link", created["workspace_id"])["login_url"])
        page.click("button[type=submit]")
        page.wait_for_url("**/dashboard/**")
        published = agent.get()
        page.goto(published["share_url"])
        frame = page.frame_locator("#doc")
        select_text(frame, "#failover", QUOTE)
        # "Suggest a change" on the selection, the replacement prefilled with the quote.
        page.locator("#sg-open:visible").wait_for()
        page.click("#sg-open")
        assert page.input_value("#fb-replacement") == QUOTE
        page.fill("#fb-replacement", "ninety seconds")
        page.fill("#fb-message", "It got faster.")
        page.fill("#fb-name", "Rita")
        page.click("#fb-form button[type=submit]")
        page.locator("#fb-status", has_text="Thank you").wait_for()

        # The agent's wait returns the suggestion.
        woke = agent.get(timeout=30)
        [item] = woke["feedback"]
        assert item["suggestion"] == {"replacement": "ninety seconds"} and item["anchor"]["quote"] == QUOTE
        assert item["anchor_state"]["status"] == "exact"

        # Everyone sees it as a tracked change: the quote struck through, the replacement inserted.
        frame.locator("ins[data-docpub-id]", has_text="ninety seconds").wait_for()
        assert frame.locator("mark[data-docpub-id]").first.text_content() == QUOTE
        page.screenshot(path=str(live_stack.data_dir.parent / "tracked-change.png"))
        agent.change_seen.set()

        # The agent accepts it: version 2, the thread resolved in it.
        accepted = agent.get()
        assert accepted["document"]["version_number"] == 2
        assert accepted["feedback"]["status"] == "resolved" and accepted["feedback"]["resolved_in_version"] == 2

        # The open page offers the new version; shown, it holds the change, and the thread is
        # listed as accepted in it.
        page.locator("#rv-live").filter(has_text="newer version (2)").wait_for()
        page.click("#rv-live-show")
        page.locator(".meta", has_text="Version 2 of 2").wait_for()
        page.frame_locator("#doc").locator("#failover", has_text="takes ninety seconds at most.").wait_for()
        assert page.locator("#rv").is_visible()  # at desktop width the comments are beside the page
        card = page.locator(f"#rv-accepted #t-{item['feedback_id']}")
        card.locator(".accepted", has_text="Accepted in version 2").wait_for()
        assert "ninety seconds" in card.text_content()

        # The reviewer approves version 2 on the share page; the agent's wait returns approved.
        page.click("#rvw-open")
        page.locator("#rvw a", has_text="Sign in to review").click()  # a pass for this link, then back
        page.locator("#rvw-who", has_text=f"as {REVIEWER}").wait_for()
        page.click("#rvw-form button[value=approved]")
        page.locator("#rvw-status", has_text="you approved this version").wait_for()
        decision = agent.get(timeout=60)
        assert decision["review_state"] == "approved"
        [review] = decision["reviews"]
        assert review["decision"] == "approved" and review["version_number"] == 2
        assert review["reviewer"]["kind"] == "member" and review["reviewer"]["id"] == REVIEWER
    finally:
        agent.change_seen.set()
        context.close()


def _api(stack, key, method, path, body=None):
    request = urllib.request.Request(f"{stack.base_url}{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={**({"X-Api-Key": key} if key else {}),
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the local stack
        return json.loads(response.read())


def test_orphaned_comments_are_listed_under_earlier_versions(live_stack, browser):  # noqa: F811
    """A comment whose passage was deleted is listed under "On earlier versions" with a link
    to the version it was written on; one whose passage changed a little is drawn where the
    text is now, marked "Text changed"."""
    key = live_stack.admin("create-workspace", "--name", "Orphans", "--plan", "free")["api_key"]
    doc = _api(live_stack, key, "POST", "/api/v1/publish", {"title": "Runbook", "html": HTML})
    share = doc["share_url"].rsplit("/", 1)[1]
    gone = _api(live_stack, None, "POST", f"/d/{share}/feedback", {
        "message": "Which worker?", "anchor": {"quote": "Restart the worker after it.", "prefix": "at most."}})
    changed = _api(live_stack, None, "POST", f"/d/{share}/feedback", {
        "message": "Source?", "anchor": {"quote": "The database failover takes", "prefix": "Read this first."}})
    _api(live_stack, key, "POST", f"/api/v1/documents/{doc['document_id']}/edit", {"edits": [
        {"old_string": "<p>Restart the worker after it.</p>", "new_string": ""},
        {"old_string": "<p id=failover>The database", "new_string": "<p id=failover>Note: the database"}]})
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        page.goto(doc["share_url"])
        page.locator(".meta", has_text="Version 2 of 2").wait_for()
        assert page.locator("#rv").is_visible()  # at desktop width the comments are beside the page
        orphan = page.locator(f"#rv-earlier #t-{gone['feedback_id']}")
        orphan.wait_for()
        assert page.locator("#rv-earlier-head").is_visible()
        link = orphan.locator("a.version")
        assert link.text_content() == "version 1" and link.get_attribute("href").endswith("?v=1")
        card = page.locator(f"#rv-threads #t-{changed['feedback_id']}")
        card.locator(".changed", has_text="Text changed").wait_for()
        marked = page.frame_locator("#doc").locator("mark[data-docpub-changed]")
        assert "".join(marked.all_text_contents()) == "the database failover takes"
        link.click()
        page.locator(".meta", has_text="Version 1 of 2").wait_for()
        page.frame_locator("#doc").locator("mark[data-docpub-id]", has_text="Restart the worker after it.").wait_for()
    finally:
        context.close()
