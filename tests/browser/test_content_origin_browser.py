"""Issue 15, item 5: a shared document's script cannot read or post to the
dashboard's origin, with a separate content origin (the local stack's default:
content on http://localhost:$PORT, everything else on http://127.0.0.1:$PORT)
and without one (content sandboxed on the base URL). Real Chromium, real stack."""
from __future__ import annotations

import json

import pytest

from tests.chromium import ARGS, CHROMIUM, browser  # noqa: F401  (browser: a fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

# Tries to read the service's pages and cookies and to post to it, then reports.
HOSTILE = """<!doctype html><html><body><pre id="out">pending</pre><script>
var BASE = "__BASE__", SHARE = "__SHARE__", out = {scriptRan: true, origin: self.origin};
function read(name, url) {
  return fetch(url, {credentials: 'include'}).then(function (r) { return r.text(); })
    .then(function (t) { out[name] = 'read:' + t.slice(0, 200); }, function (e) { out[name] = 'blocked:' + e.name; });
}
function post(name, url, body) {
  return fetch(url, {method: 'POST', mode: 'no-cors', credentials: 'include',
                     headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: body})
    .then(function (r) { out[name] = 'sent:' + r.type; }, function (e) { out[name] = 'blocked:' + e.name; });
}
try { out.parent = 'read:' + window.parent.document.cookie; } catch (e) { out.parent = 'blocked:' + e.name; }
try { out.cookie = 'read:' + document.cookie; } catch (e) { out.cookie = 'blocked:' + e.name; }
Promise.all([
  read('me', BASE + '/api/v1/me'),
  read('dashboard', BASE + '/dashboard/documents'),
  read('relative', '/dashboard/documents'),
  post('feedback', BASE + '/d/' + SHARE + '/feedback', 'message=posted+by+the+document'),
  post('keys', BASE + '/dashboard/keys', 'name=posted-by-the-document'),
]).then(function () { document.getElementById('out').textContent = JSON.stringify(out); });
</script></body></html>"""


@pytest.fixture(scope="module", params=["content-origin", "same-origin-sandbox"])
def site(request, tmp_path_factory):
    from tests.stack import LocalStack

    env = {} if request.param == "content-origin" else {"DOCPUB_CONTENT_URL": ""}
    running = LocalStack(tmp_path_factory.mktemp(request.param) / "data", env=env).start()
    yield request.param, running
    running.stop()


def test_a_documents_script_cannot_read_or_post_to_the_dashboards_origin(site, browser):
    mode, stack = site
    with stack.client() as http:
        doc = http.post("/api/v1/publish", json={"title": "Hostile", "html": "<p>placeholder</p>"}).json()
        share = doc["share_url"].rsplit("/", 1)[1]
        hostile = HOSTILE.replace("__BASE__", stack.base_url).replace("__SHARE__", share)
        doc = http.post("/api/v1/publish", json={"title": "Hostile", "html": hostile,
                                                 "document_id": doc["document_id"]}).json()
    context = browser.new_context()
    context.set_default_timeout(20_000)
    try:
        context.add_cookies([{"name": "docpub_session", "value": "topsecret", "url": stack.base_url,
                              "sameSite": "Lax"}])
        page = context.new_page()
        page.goto(doc["share_url"])
        assert page.title() == "Hostile"
        out = page.frame_locator("#doc").locator("#out")
        out.filter(has_not_text="pending").wait_for()
        result = json.loads(out.text_content())
        frame = next(f for f in page.frames if "/v/" in f.url)
        if mode == "content-origin":
            assert frame.url.startswith(f"http://localhost:{stack.port}/d/{share}/v/"), frame.url
        else:
            assert frame.url.startswith(f"{stack.base_url}/d/{share}/v/"), frame.url
        assert result["scriptRan"] is True and result["origin"] == "null"  # sandboxed either way
        for name in ("parent", "cookie", "me", "dashboard", "relative"):
            assert not result[name].startswith("read:") or "topsecret" not in result[name], (name, result)
        for name in ("parent", "me", "dashboard"):
            assert result[name].startswith("blocked:"), (name, result)
        assert "topsecret" not in json.dumps(result)
    finally:
        context.close()
    # The posts left no trace: no feedback, no API key.
    with stack.client() as http:
        feedback = http.get("/api/v1/feedback", params={"document_id": doc["document_id"], "status": "all"}).json()
        assert feedback["feedback"] == [], feedback
