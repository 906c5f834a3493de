"""The review loop end to end, as the issue asks: an agent (the official MCP client)
publishes and waits; a viewer in Chromium comments on a sentence; the agent's wait
returns that comment with its anchor; the agent edits the sentence and replies; the
viewer, on the page still open, sees the reply and the notice of the new version, and
shows it with one click (where the comment follows the edited sentence, "Text changed");
a tab holding the link to version 1 (`?version=1`) says a newer one exists and stays."""
from __future__ import annotations

import asyncio
import threading

import pytest

from tests.chromium import browser  # noqa: F401  (a fixture)
from tests.mcp_agent import McpAgent, select_text
from tests.stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

SENTENCE = "We will ship the new pricing page in March."
HTML = f"<h1>Launch plan</h1><p id=intro>Short intro.</p><p id=plan>{SENTENCE} Then we rest.</p>"


@pytest.fixture(scope="module")
def live_stack(tmp_path_factory):
    stack = LocalStack(tmp_path_factory.mktemp("review") / "data",
                       env={"DOCPUB_LIVE_POLL_SECONDS": "2"}).start()
    yield stack
    stack.stop()


class Agent(McpAgent):
    def __init__(self, stack, key):
        self.viewer_done = threading.Event()
        super().__init__(stack, key)

    async def script(self, call):
        published = await call("publish_document", {"title": "Launch plan", "html": HTML})
        since = (await call("wait_for_feedback", {"document_id": published["document_id"],
                                                  "timeout_seconds": 0}))["since"]
        self.out.put(published)
        woke = await call("wait_for_feedback", {"document_id": published["document_id"], "since": since,
                                                "timeout_seconds": 25})
        self.out.put(woke)
        [item] = woke["feedback"]
        await call("edit_document", {"document_id": published["document_id"], "edits": [
            {"old_string": "in March.", "new_string": "in February."}]})
        self.out.put(await call("reply_to_feedback", {"feedback_id": item["feedback_id"],
                                                      "message": "Done: moved to February."}))
        await asyncio.to_thread(self.viewer_done.wait, 120)
        self.out.put(await call("list_feedback", {"document_id": published["document_id"]}))


def test_agent_waits_viewer_comments_agent_edits_and_replies_viewer_sees_it(live_stack, browser):  # noqa: F811
    key = live_stack.admin("create-workspace", "--name", "Review", "--plan", "free")["api_key"]
    agent = Agent(live_stack, key)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        published = agent.get()
        share_url = published["share_url"]

        # A second tab holds the link to version 1 (contract 7f): it stays there.
        pinned = context.new_page()
        pinned.goto(share_url + "?version=1")
        assert pinned.locator("#rv-pinned").is_hidden()

        # The viewer (on a phone-sized screen) selects the sentence and comments on it.
        page.goto(share_url)
        frame = page.frame_locator("#doc")
        select_text(frame, "#plan", SENTENCE)
        page.locator("#fb-open", has_text="Feedback on selection").wait_for()
        page.click("#fb-open")
        assert page.input_value("#fb-quote") == SENTENCE
        page.fill("#fb-message", "March is too late, can we do February?")
        page.fill("#fb-name", "Kim")
        page.click("#fb-form button[type=submit]")
        page.locator("#fb-status", has_text="Thank you").wait_for()

        # The agent's wait returns that comment, with its anchor.
        woke = agent.get(timeout=30)
        [item] = woke["feedback"]
        assert item["message"] == "March is too late, can we do February?" and item["name"] == "Kim"
        assert item["anchor"]["quote"] == SENTENCE
        assert item["anchor"]["prefix"].endswith("Short intro.") and item["anchor"]["suffix"] == " Then we rest."

        # The open page highlights the passage in the document and lists the thread.
        frame.locator("mark[data-docpub-id]").first.wait_for()
        assert "".join(frame.locator("mark[data-docpub-id]").all_text_contents()) == SENTENCE

        # The agent edits the sentence and replies.
        reply = agent.get()
        assert reply["author"] == "owner"

        # The open page learns both within the live interval (no reload): the reply in the
        # thread and the notice of a newer version; one click shows it.
        page.click("#rv-toggle")  # the viewer opens the comments
        thread = page.locator(f"#t-{item['feedback_id']}")
        thread.locator(".replies", has_text="Done: moved to February.").wait_for()
        notice = page.locator("#rv-live")
        notice.filter(has_text="newer version (2)").wait_for()
        # The pinned tab says so too, and live refresh does not move it.
        pinned.locator("#rv-pinned", has_text="A newer version (2) exists.").wait_for()
        assert pinned.url.endswith("?version=1") and pinned.locator("#rv-live").is_hidden()
        assert pinned.locator(".meta", has_text="Version 1 of 1").is_visible()
        pinned.frame_locator("#doc").locator("#plan", has_text="in March.").wait_for()
        pinned.close()
        page.click("#rv-live-show")
        page.locator(".meta", has_text="Version 2 of 2").wait_for()
        page.frame_locator("#doc").locator("#plan", has_text="in February.").wait_for()
        page.click("#rv-toggle")
        card = page.locator(f"#t-{item['feedback_id']}")
        # The comment follows the edited sentence (contract 7e: fuzzy), marked "Text changed".
        card.locator(".changed", has_text="Text changed").wait_for()
        marked = page.frame_locator("#doc").locator("mark[data-docpub-changed]")
        assert "".join(marked.all_text_contents()) == SENTENCE.replace("March.", "February.")
        assert "Done: moved to February." in card.text_content()
        # The viewer answers back in the thread.
        card.locator("textarea").fill("Thanks!")
        card.locator("button", has_text="Reply").click()
        page.locator(f"#t-{item['feedback_id']} .replies", has_text="Thanks!").wait_for()
        agent.viewer_done.set()
        thread_now = agent.get()["feedback"][0]
        assert [r["author"] for r in thread_now["replies"]] == ["owner", "viewer"]
    finally:
        agent.viewer_done.set()
        context.close()
