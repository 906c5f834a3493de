"""Share link pages: wrapper, sandboxed content, caching, versions, 404s, payload size."""
from __future__ import annotations

import base64
import gzip
import json
import random
import re

from tests.helpers import auth
from tests.sharing_helpers import pro, publish  # noqa: F401  (fixtures)

SANDBOX = "allow-scripts allow-forms allow-popups allow-modals"


def _iframe_src(body: str) -> str:
    match = re.search(r'<iframe[^>]*\bsrc="([^"]+)"', body)
    assert match, body
    return match.group(1)


def _assert_html_safety_headers(response):
    assert response.headers["Content-Type"].startswith("text/html")
    assert response.headers["X-Robots-Tag"].startswith("noindex")
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert "frame-ancestors" in response.headers["Content-Security-Policy"]


def test_wrapper_page_frames_the_latest_version_sandboxed(client, workspace):
    _, key = workspace
    doc = publish(client, key, "Q3 <plan> & more", "<p id=x>secret body text</p><script>var mine=1</script>")
    r = client.http.get(f"/d/{doc['share_id']}")
    assert r.status_code == 200
    _assert_html_safety_headers(r)
    body = r.body.decode()
    assert "<title>Q3 &lt;plan&gt; &amp; more</title>" in body
    assert "Q3 <plan>" not in body
    # The document itself is not in the wrapper: only a sandboxed frame pointing at its version.
    assert "secret body text" not in body and "var mine" not in body
    assert _iframe_src(body) == f"/d/{doc['share_id']}/v/{doc['version_id']}"
    assert f'sandbox="{SANDBOX}"' in body
    assert "allow-same-origin" not in body
    assert "Published with <b>Docpub</b>" in body  # free workspace
    assert f'action="/d/{doc["share_id"]}/feedback?v=1"' in body
    csp = r.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'sha256-" in csp and "unsafe-inline" not in csp
    assert r.headers["Cache-Control"] == "public, max-age=0, s-maxage=60"


def test_inline_script_and_style_match_their_csp_hashes(client, workspace):
    import hashlib

    _, key = workspace
    doc = publish(client, key)
    r = client.http.get(f"/d/{doc['share_id']}")
    body = r.body.decode()
    csp = r.headers["Content-Security-Policy"]
    for tag in ("script", "style"):
        blocks = re.findall(rf"<{tag}>(.*?)</{tag}>", body, re.S)
        assert len(blocks) == 1
        digest = base64.b64encode(hashlib.sha256(blocks[0].encode()).digest()).decode()
        assert f"{tag}-src 'sha256-{digest}'" in csp


def test_pro_branding_replaces_the_docpub_mark(client, services, pro):
    ws, key = pro
    doc = publish(client, key)
    plain = client.http.get(f"/d/{doc['share_id']}").body.decode()
    assert "Published with" not in plain  # Pro without branding: no mark at all
    services.workspaces.ctx.workspaces.set_fields(ws.id, {"brand_name": "Acme <Labs>",
                                                          "brand_tagline": "Docs & more"})
    branded = client.http.get(f"/d/{doc['share_id']}").body.decode()
    assert "Acme &lt;Labs&gt;" in branded and "Docs &amp; more" in branded
    assert "Published with" not in branded


def test_content_is_sandboxed_cacheable_60_s_and_carries_the_selection_script(client, workspace):
    _, key = workspace
    html = "<!doctype html><html><body><p>héllo 日本</p></body></html>"
    doc = publish(client, key, html=html)
    r = client.http.get(f"/d/{doc['share_id']}/v/{doc['version_id']}")
    assert r.status_code == 200
    _assert_html_safety_headers(r)
    csp = r.headers["Content-Security-Policy"]
    assert csp.startswith(f"sandbox {SANDBOX};")
    assert "allow-same-origin" not in csp
    assert "frame-ancestors 'self'" in csp
    assert r.headers["Cache-Control"] == "public, max-age=60, s-maxage=60"  # withdrawals: docs/sharing.md
    etag = r.headers["ETag"]
    assert etag.startswith('"') and not etag.startswith("W/")
    text = r.body.decode("utf-8")
    assert text.startswith(html)
    assert "docpub:selection" in text[len(html):]


def test_conditional_get_answers_304_without_reading_s3(client, workspace, monkeypatch):
    from chalicelib import wiring

    _, key = workspace
    doc = publish(client, key, html="<p>" + "cache me " * 500 + "</p>")
    path = f"/d/{doc['share_id']}/v/{doc['version_id']}"
    etag = client.http.get(path).headers["ETag"]
    gz = client.http.get(path, headers={"Accept-Encoding": "gzip"})
    assert gz.headers["Content-Encoding"] == "gzip"
    gz_etag = gz.headers["ETag"]
    assert gz_etag != etag  # one strong ETag per encoding

    def no_s3(*_args, **_kwargs):
        raise AssertionError("S3 must not be read for a conditional GET that matches")

    monkeypatch.setattr(wiring.sharing().ctx.blobs, "get_html", no_s3)
    for tag in (etag, gz_etag, f'"other", {etag}'):
        r = client.http.get(path, headers={"If-None-Match": tag})
        assert r.status_code == 304
        assert r.body == b""
        assert r.headers["ETag"] == etag
        assert r.headers["Cache-Control"] == "public, max-age=60, s-maxage=60"  # withdrawals: docs/sharing.md
    monkeypatch.undo()
    r = client.http.get(path, headers={"If-None-Match": '"v_something.1"'})
    assert r.status_code == 200


def test_gzip_content_round_trips(client, workspace):
    _, key = workspace
    html = "<p>" + "日本語のテキスト。" * 2000 + "</p>"
    doc = publish(client, key, html=html)
    r = client.http.get(f"/d/{doc['share_id']}/v/{doc['version_id']}", headers={"Accept-Encoding": "gzip"})
    assert r.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(r.body).decode().startswith(html)
    assert "Accept-Encoding" in r.headers["Vary"]


# Issue 38 (bytes per view): what a viewer downloads of the share page's own (its wrapper
# with the inline style and script, and the script injected into the content), compressed.
SHARE_PAGE_OWN_BYTES = 15_000


def test_the_share_pages_own_bytes_stay_within_15_kb_compressed(client, workspace):
    """A share view of a small document: the wrapper (HTML + page.css + page.js inline) and
    the content answer (the document + frame.js), both gzip as a browser asks for them. The
    document is 20 bytes, so nearly everything counted is the page's own."""
    _, key = workspace
    doc = publish(client, key, html="<p>a small page</p>")
    asks = {"Accept-Encoding": "gzip, deflate, br"}
    sizes = {}
    for name, path in (("wrapper", f"/d/{doc['share_id']}"),
                       ("content", f"/d/{doc['share_id']}/v/{doc['version_id']}")):
        r = client.http.get(path, headers=asks)
        assert r.status_code == 200 and r.headers["Content-Encoding"] == "gzip", name
        sizes[name] = len(r.body)
        assert len(gzip.decompress(r.body)) > 2 * len(r.body), name  # text: compression pays
    assert sum(sizes.values()) <= SHARE_PAGE_OWN_BYTES, sizes


def test_old_versions_by_number(client, workspace):
    _, key = workspace
    v1 = publish(client, key, "First", "<p>one</p>")
    v2 = publish(client, key, "Second", "<p>two</p>", document_id=v1["document_id"])
    share = v1["share_id"]
    latest = client.http.get(f"/d/{share}").body.decode()
    assert _iframe_src(latest) == f"/d/{share}/v/{v2['version_id']}"
    assert "Version 2 of 2" in latest
    old = client.http.get(f"/d/{share}?v=1")
    assert old.status_code == 200
    body = old.body.decode()
    assert _iframe_src(body) == f"/d/{share}/v/{v1['version_id']}"
    assert "Version 1 of 2" in body and f'href="/d/{share}"' in body
    assert f'action="/d/{share}/feedback?v=1"' in body
    assert client.http.get(f"/d/{share}/v/{v1['version_id']}").body.decode().startswith("<p>one</p>")
    for bad in ("3", "0", "-1", "abc", "1.5"):
        r = client.http.get(f"/d/{share}?v={bad}")
        assert r.status_code == 404, bad
        assert r.headers["Content-Type"].startswith("text/html")


def test_unknown_links_and_versions_are_404_pages(client, workspace):
    _, key = workspace
    doc = publish(client, key)
    other = publish(client, key, "Other")
    for path in ("/d/AAAAAAAAAAAAAAAAAAAAAA", "/d/short", "/d/AAAAAAAAAAAAAAAAAAAAAA/v/v_abc",
                 f"/d/{doc['share_id']}/v/v_doesnotexist",
                 f"/d/{doc['share_id']}/v/{other['version_id']}",  # a version of another document
                 f"/d/{doc['share_id']}/v/..%2F..%2Fsecret"):
        r = client.http.get(path)
        assert r.status_code == 404, path
        _assert_html_safety_headers(r)
        assert "Not found" in r.body.decode()
        assert "Traceback" not in r.body.decode()


def test_deleted_document_link_is_404(client, workspace):
    _, key = workspace
    doc = publish(client, key)
    r = client.http.delete(f"/api/v1/documents/{doc['document_id']}", headers=auth(key))
    assert r.status_code == 204
    assert client.http.get(f"/d/{doc['share_id']}").status_code == 404
    assert client.http.get(f"/d/{doc['share_id']}/v/{doc['version_id']}").status_code == 404


def test_storage_trouble_is_an_html_error_page(client, workspace, monkeypatch):
    from chalicelib.ports import StorageUnavailable
    from chalicelib import wiring

    _, key = workspace
    doc = publish(client, key)

    def busy(*_a, **_k):
        raise StorageUnavailable("ThrottlingException")

    monkeypatch.setattr(wiring.sharing().ctx.documents, "get_for_share", busy)
    r = client.http.get(f"/d/{doc['share_id']}")
    assert r.status_code == 503
    assert r.headers["Content-Type"].startswith("text/html")
    assert r.headers["Retry-After"] == "1"
    assert "Traceback" not in r.body.decode()


# ------------------------------------------------------------------ Lambda's 6 MB response limit

def _lambda_response(path: str, headers: dict) -> dict:
    """Invoke the app exactly as Lambda would, and return the dict it hands back."""
    from chalice.local import LambdaEventConverter, RouteMatcher

    from app import app

    converter = LambdaEventConverter(RouteMatcher(list(app.routes)))
    event = converter.create_lambda_event("GET", path, headers)
    event["requestContext"]["identity"]["sourceIp"] = "203.0.113.9"
    return app(event, None)


def test_a_4_mib_japanese_version_fits_lambdas_6_mb_response(client, workspace):
    _, key = workspace
    rng = random.Random(5)
    alphabet = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)] + list("、。のをにはがでと")
    prefix, suffix = "<!doctype html><html><body><p>", "</p></body></html>"
    budget = 4 * 1024 * 1024 - len(prefix) - len(suffix)
    text = "".join(rng.choice(alphabet) for _ in range(budget // 3))
    html = prefix + text + suffix
    size = len(html.encode("utf-8"))
    assert 4 * 1024 * 1024 - 3 <= size <= 4 * 1024 * 1024
    doc = publish(client, key, html=html)
    path = f"/d/{doc['share_id']}/v/{doc['version_id']}"
    limit = 6_000_000  # Lambda: 6 MB synchronous response payload (decimal, to be safe)
    measured = {}
    for name, headers in (("gzip", {"accept-encoding": "gzip, deflate, br"}), ("identity", {})):
        response = _lambda_response(path, headers)
        payload = len(json.dumps(response).encode("utf-8"))
        measured[name] = payload
        assert response["statusCode"] == 200
        assert payload < limit, (name, payload)
        raw = base64.b64decode(response["body"]) if response.get("isBase64Encoded") else response["body"].encode()
        if name == "gzip":
            assert response["headers"]["Content-Encoding"] == "gzip"
            raw = gzip.decompress(raw)
        assert raw.decode("utf-8").startswith(html)
    print(f"4 MiB Japanese version ({size} bytes): Lambda response payload {measured}")
