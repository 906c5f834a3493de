"""Share links in a real browser (Debian chromium via Playwright) against the real local stack."""
from __future__ import annotations

import json
import tempfile

import pytest

from tests.chromium import ARGS, CHROMIUM, browser  # noqa: F401  (browser: a fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

# A document that tries to reach the service's cookies and API, and reports what it got.
HOSTILE = """<!doctype html><html><head><style>#styled { color: rgb(0, 128, 0); }</style></head>
<body><p id="styled">Styled by the document</p><pre id="out">pending</pre>
<script>
var out = {scriptRan: true};
try { out.cookie = 'read:' + document.cookie; } catch (e) { out.cookie = 'blocked:' + e.name; }
try { out.parentCookie = 'read:' + window.parent.document.cookie; } catch (e) { out.parentCookie = 'blocked:' + e.name; }
try { out.storage = 'read:' + String(window.localStorage.length); } catch (e) { out.storage = 'blocked:' + e.name; }
function done() { document.getElementById('out').textContent = JSON.stringify(out); }
fetch('/api/v1/me', {credentials: 'include'})
  .then(function (r) { return r.text(); })
  .then(function (t) { out.me = 'read:' + t; done(); }, function (e) { out.me = 'blocked:' + e.name; done(); });
</script></body></html>"""


@pytest.fixture
def page(browser):
    with tempfile.TemporaryDirectory():
        context = browser.new_context()
        context.set_default_timeout(15_000)
        yield context.new_page()
        context.close()


@pytest.fixture(scope="module")
def free_key(stack):
    """A free workspace of this module's own: the shared dev workspace's 5 documents
    may be used up by other e2e tests of the session."""
    return stack.admin("create-workspace", "--name", "Browser Free", "--plan", "free")["api_key"]


@pytest.fixture(scope="module")
def pro_key(stack):
    return stack.admin("create-workspace", "--name", "Browser Pro", "--plan", "pro")["api_key"]


def _publish(stack, key, title, html):
    with stack.client(key) as http:
        r = http.post("/api/v1/publish", json={"title": title, "html": html})
        assert r.status_code == 200, r.text
        return r.json()


def test_document_scripts_run_but_cannot_reach_the_service(stack, page, free_key):
    doc = _publish(stack, free_key, "Hostile", HOSTILE)
    # A cookie of the service origin that a document must never see.
    page.context.add_cookies([{"name": "dp_session", "value": "topsecret", "url": stack.base_url,
                               "sameSite": "Lax"}])
    page.goto(doc["share_url"])
    assert page.title() == "Hostile"
    assert "topsecret" in page.evaluate("document.cookie")  # the wrapper (service origin) has it
    frame = page.frame_locator("#doc")
    out = frame.locator("#out")
    out.filter(has_not_text="pending").wait_for()
    result = json.loads(out.text_content())
    assert result["scriptRan"] is True
    assert result["cookie"].startswith("blocked:"), result
    assert result["parentCookie"].startswith("blocked:"), result
    assert result["storage"].startswith("blocked:"), result
    assert result["me"].startswith("blocked:"), result
    assert "topsecret" not in json.dumps(result)
    color = frame.locator("#styled").evaluate("el => getComputedStyle(el).color")
    assert color == "rgb(0, 128, 0)"  # the document's own styles apply
    # The frame runs in an opaque origin.
    content = next(f for f in page.frames if "/v/" in f.url)
    assert content.evaluate("self.origin") == "null"
    # Opened directly (not framed), the content is still sandboxed by its CSP header.
    page.goto(f"{stack.base_url}/d/{doc['share_url'].rsplit('/', 1)[1]}/v/{doc['version_id']}")
    page.locator("#out").filter(has_not_text="pending").wait_for()
    direct = json.loads(page.locator("#out").text_content())
    assert direct["cookie"].startswith("blocked:") and direct["me"].startswith("blocked:")
    assert page.evaluate("self.origin") == "null"


def test_unlock_flow(stack, page, pro_key):
    doc = _publish(stack, pro_key, "Board minutes", "<h1 id=body-title>Minutes of the board</h1>")
    with stack.client(pro_key) as http:
        r = http.put(f"/api/v1/documents/{doc['document_id']}/passphrase", json={"passphrase": "open sesame!"})
        assert r.status_code == 204, r.text
    response = page.goto(doc["share_url"])
    assert response.status == 200
    assert "Board minutes" not in page.content()
    assert page.locator("iframe").count() == 0
    page.fill("input[name=passphrase]", "wrong words")
    with page.expect_navigation() as nav:
        page.click("button[type=submit]")
    assert nav.value.status == 401
    assert page.locator("[role=alert]").text_content().strip() == "That passphrase is not right."
    page.fill("input[name=passphrase]", "open sesame!")
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.url == doc["share_url"]
    assert page.title() == "Board minutes"
    page.frame_locator("#doc").locator("#body-title").wait_for()
    assert page.frame_locator("#doc").locator("#body-title").text_content() == "Minutes of the board"
    share_id = doc["share_url"].rsplit("/", 1)[1]
    cookies = [c for c in page.context.cookies() if c["name"] == "dp_unlock"]
    assert len(cookies) == 1
    assert cookies[0]["httpOnly"] is True and cookies[0]["sameSite"] == "Lax"
    assert cookies[0]["path"] == f"/d/{share_id}"
    assert "dp_unlock" not in page.evaluate("document.cookie")  # HttpOnly


def test_feedback_with_a_quoted_selection(stack, page, free_key):
    doc = _publish(stack, free_key, "Proposal",
                   "<p id=para>We will ship the new pricing page in March.</p>")
    page.goto(doc["share_url"])
    frame = page.frame_locator("#doc")
    frame.locator("#para").wait_for()
    # The viewer selects text inside the (sandboxed, cross-origin) document...
    frame.locator("#para").evaluate("""el => {
        const range = document.createRange();
        range.setStart(el.firstChild, 8); range.setEnd(el.firstChild, 36);
        const selection = getSelection(); selection.removeAllRanges(); selection.addRange(range);
    }""")
    # ...and presses the feedback button: the quote is prefilled from the selection.
    page.locator("#fb-open", has_text="Feedback on selection").wait_for()  # the frame reported it
    page.click("#fb-open")
    assert page.input_value("#fb-quote") == "ship the new pricing page in"
    page.fill("#fb-message", "Can we make it February?")
    page.fill("#fb-name", "Kim")
    page.click("#fb-form button[type=submit]")
    status = page.locator("#fb-status")
    status.filter(has_text="Thank you").wait_for()
    feedback_id = status.get_attribute("data-feedback-id")
    with stack.client(free_key) as http:
        listing = http.get("/api/v1/feedback", params={"document_id": doc["document_id"]}).json()
    assert [f["feedback_id"] for f in listing["feedback"]] == [feedback_id]
    item = listing["feedback"][0]
    assert item["message"] == "Can we make it February?"
    assert item["quote"] == "ship the new pricing page in"
    assert item["name"] == "Kim"
    assert item["version_id"] == doc["version_id"]
