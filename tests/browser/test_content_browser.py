"""A bundle's image and stylesheet load through the share link in real Chromium,
served from the content origin (the local stack's default), sandboxed; also for a
protected document once unlocked (the content origin never sees the unlock cookie:
the grant travels in the version segment). Real stack, real browser."""
from __future__ import annotations

import base64
import io

import pytest

from tests.chromium import ARGS, CHROMIUM, browser  # noqa: F401  (browser: a fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

PAGE = """<!doctype html><html><head><title>Chart report</title>
<link rel="stylesheet" href="./css/style.css"></head>
<body><h1 id="heading">Quarterly chart</h1><img id="chart" src="img/chart.png" alt="chart">
<p><a id="sub" href="sub/page.html">more</a></p></body></html>"""
CSS = "#heading { color: rgb(200, 30, 30); }"


def _png(width: int = 40, height: int = 20) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(out, format="PNG")
    return out.getvalue()


FILES = [{"path": "img/chart.png", "content": base64.b64encode(_png()).decode(), "encoding": "base64"},
         {"path": "css/style.css", "content": CSS},
         {"path": "sub/page.html", "content": "<p id=deep>Second page</p>"}]


@pytest.fixture
def page(browser):
    context = browser.new_context()
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def _publish(stack, key, **body):
    with stack.client(key) as http:
        r = http.post("/api/v1/publish", json={"html": PAGE, "files": FILES, **body})
        assert r.status_code == 200, r.text
        return r.json()


def _assert_bundle_loads(page):
    frame = page.frame_locator("#doc")
    frame.locator("#heading").wait_for()
    assert frame.locator("#heading").evaluate("el => getComputedStyle(el).color") == "rgb(200, 30, 30)"
    frame.locator("#chart").evaluate("el => el.complete || new Promise(r => el.onload = r)")
    assert frame.locator("#chart").evaluate("el => [el.naturalWidth, el.naturalHeight]") == [40, 20]
    content = next(f for f in page.frames if "/v/" in f.url)
    assert content.evaluate("self.origin") == "null"  # sandboxed like any document
    return content


def test_a_bundles_image_and_stylesheet_load_through_the_share_link(stack, page):
    key = stack.admin("create-workspace", "--name", "Bundle browser", "--plan", "free")["api_key"]
    doc = _publish(stack, key)
    page.goto(doc["share_url"])
    assert page.title() == "Chart report"  # inferred from <title>
    content = _assert_bundle_loads(page)
    assert content.url.endswith(f"/v/{doc['version_id']}/index.html")
    assert content.url.startswith("http://localhost:")  # the separate content origin
    # A relative link to another page of the bundle works too.
    page.frame_locator("#doc").locator("#sub").click()
    page.frame_locator("#doc").locator("#deep").wait_for()


def test_a_protected_bundle_loads_its_files_once_unlocked(stack, page):
    key = stack.admin("create-workspace", "--name", "Bundle browser pro", "--plan", "pro")["api_key"]
    doc = _publish(stack, key, title="Locked chart")
    with stack.client(key) as http:
        r = http.put(f"/api/v1/documents/{doc['document_id']}/passphrase", json={"passphrase": "open sesame!"})
        assert r.status_code == 204, r.text
    page.goto(doc["share_url"])
    page.fill("input[name=passphrase]", "open sesame!")
    with page.expect_navigation():
        page.click("button[type=submit]")
    _assert_bundle_loads(page)


def _signed_up(browser, stack, email: str, address: str):
    """A new account signed up over HTTP from its own loopback address (sign-ups are limited
    per address and the stack is shared), its session handed to a fresh browser context."""
    import re
    from html import unescape

    import httpx

    from tests.chromium import mail_link_in

    def csrf(text: str) -> str:
        return unescape(re.search(r'name="csrf_token" value="([^"]+)"', text).group(1))

    with httpx.Client(base_url=stack.base_url, timeout=30,
                      transport=httpx.HTTPTransport(local_address=address)) as http:
        form = http.get("/dashboard/sign-up")
        page = http.post("/dashboard/sign-up", data={"csrf_token": csrf(form.text), "email": email,
                                                     "password": "a long browser password",
                                                     "workspace_name": "Uploads"})
        assert "Check your email" in page.text, page.text[:500]
        link = mail_link_in(stack.data_dir, email, "verify")
        path = link[link.index("/dashboard/"):]
        confirm = http.get(path)
        done = http.post(path.split("?", 1)[0], data={"csrf_token": csrf(confirm.text),
                                                      "token": path.split("token=", 1)[1]})
        assert done.status_code == 303, done.text[:500]
        session = http.cookies.get("docpub_session")
    assert session
    context = browser.new_context()
    context.set_default_timeout(30_000)
    context.add_cookies([{"name": "docpub_session", "value": session, "url": stack.base_url}])
    return context, context.new_page()


def test_the_dashboard_uploads_a_zip_over_6_mib_through_storage_with_progress(stack, browser, tmp_path):
    """Over the request cap: a ticket, a PUT of the file to its upload_url (the local upload
    route here; a presigned S3 URL deployed) with progress, then the form with upload_id."""
    import os
    import zipfile

    photo = os.urandom(7 * 1024 * 1024)
    path = tmp_path / "big-site.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("index.html", "<title>Big upload</title><h1>Big upload</h1><img src='img/photo.jpg'>")
        archive.writestr("img/photo.jpg", photo)
    assert path.stat().st_size > 6 * 1024 * 1024
    context, page = _signed_up(browser, stack, "big-upload@example.com", "127.0.0.41")
    statuses: list[str] = []
    page.expose_function("uploadStatus", lambda text: statuses.append(text))
    context.add_init_script("""document.addEventListener('DOMContentLoaded', () => {
      const s = document.querySelector('.upload-status');
      if (s) new MutationObserver(() => window.uploadStatus(s.textContent)).observe(s, {childList: true});
    });""")
    requests: list[tuple[str, str, int]] = []
    page.on("request", lambda r: requests.append((r.method, r.url)))
    page.goto(stack.base_url + "/dashboard/upload")
    page.set_input_files("input[type=file]", str(path))
    page.click("button[type=submit] >> text=Publish")
    page.wait_for_url("**/dashboard/documents/*?m=created")
    assert "Big upload" in page.locator("h1").inner_text()
    assert any(s.startswith("Uploading ") and "%" in s for s in statuses), statuses
    assert any(s.startswith("Uploaded ") for s in statuses), statuses
    # One PUT of the file to the upload route (the server checks it is exactly the declared
    # size), then the form: a 7 MiB form would be refused (413), so it carried the upload_id.
    puts = [r for r in requests if r[0] == "PUT"]
    assert len(puts) == 1 and "/uploads/up_" in puts[0][1]
    assert [r[0] for r in requests if "/dashboard/upload" in r[1]] == ["GET", "POST", "POST"]  # page, ticket, form
    # The stored version holds the 7 MiB file.
    document_id = page.url.split("/documents/")[1].split("?")[0]
    fetched = page.request.get(f"{stack.base_url}/dashboard/documents/{document_id}/download")  # the session's cookies
    assert fetched.status == 200
    with zipfile.ZipFile(io.BytesIO(fetched.body())) as archive:
        assert archive.read("img/photo.jpg") == photo
    # A refusal is said in the form, before any byte is sent.
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"x" * (4 * 1024 * 1024))
    page.goto(stack.base_url + "/dashboard/upload")
    page.set_input_files("input[type=file]", str(notes))
    page.fill("input[name=title]", "Notes")
    page.click("button[type=submit] >> text=Publish")
    alert = page.locator(".upload-error[role=alert]")
    alert.wait_for()
    assert "filename" in alert.inner_text() and ".zip" in alert.inner_text()
    assert page.url.endswith("/dashboard/upload")
    context.close()
