"""Bundles (contract 7b): files beside the page, zip uploads, multipart, content-hash
storage, share-link resolution, downloads. Both stores unless said otherwise."""
from __future__ import annotations

import base64
import io
import json
import stat
import time
import tracemalloc
import zipfile

import pytest
from urllib3 import encode_multipart_formdata

from tests.helpers import post_json

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
PAGE = '<!doctype html><title>Report</title><link rel="stylesheet" href="style.css"><img src="img/chart.png">'
ACCEPT_ALL = {"Accept": "*/*"}


def files(**extra):
    listed = [{"path": "img/chart.png", "content": base64.b64encode(PNG).decode(), "encoding": "base64"},
              {"path": "style.css", "content": "body{color:red}"}]
    return listed + [{"path": p, "content": c} for p, c in extra.items()]


def publish(client, key, **body):
    return post_json(client, "/api/v1/publish", {"html": PAGE, **body}, key)


def ok(response) -> dict:
    assert response.status_code == 200, response.body[:500]
    return json.loads(response.body)


def error(response, status: int) -> dict:
    assert response.status_code == status, response.body[:500]
    return json.loads(response.body)["error"]


def share_of(result: dict) -> str:
    return result["share_url"].rsplit("/d/", 1)[1]


def upload(client, key, filename: str, data: bytes, **fields):
    body, content_type = encode_multipart_formdata({**fields, "file": (filename, data)})
    return client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": content_type},
                            body=body)


def make_zip(entries: dict, symlinks: dict | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return out.getvalue()


def stored_files(ctx, workspace_id: str) -> list[str]:
    return [key for key, _ in ctx.blobs.list_keys(f"files/{workspace_id}/")]


# ------------------------------------------------------------------ JSON files and the share link

@BOTH
def test_files_are_listed_and_served_beside_the_page(client, workspace):
    ws, key = workspace
    result = ok(publish(client, key, files=files(**{"sub/page.html": "<p>sub</p>"})))
    doc = json.loads(client.http.get(f"/api/v1/documents/{result['document_id']}",
                                     headers={"X-Api-Key": key}).body)
    listed = {f["path"]: f for f in doc["versions"][0]["files"]}
    assert set(listed) == {"img/chart.png", "style.css", "sub/page.html"}
    assert listed["img/chart.png"]["size_bytes"] == len(PNG)
    assert len(listed["style.css"]["sha256"]) == 64
    share, version = share_of(result), result["version_id"]
    wrapper = client.http.get(f"/d/{share}").body.decode()
    assert f'src="/d/{share}/v/{version}/index.html"' in wrapper  # relative references resolve inside
    page = client.http.get(f"/d/{share}/v/{version}/index.html")
    assert page.status_code == 200 and b'href="style.css"' in page.body
    assert "sandbox" in page.headers["Content-Security-Policy"]
    for path, kind, body in (("img/chart.png", "image/png", PNG), ("style.css", "text/css; charset=utf-8",
                                                                     b"body{color:red}"),
                             ("sub/page.html", "text/html; charset=utf-8", b"<p>sub</p>")):
        r = client.http.get(f"/d/{share}/v/{version}/{path}", headers=ACCEPT_ALL)
        assert r.status_code == 200, (path, r.body[:200])
        assert r.headers["Content-Type"] == kind and r.body == body
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert "sandbox" in r.headers["Content-Security-Policy"]  # sandboxed like the page
        assert "allow-same-origin" not in r.headers["Content-Security-Policy"]
    etag = client.http.get(f"/d/{share}/v/{version}/style.css").headers["ETag"]
    assert etag == f'"{listed["style.css"]["sha256"]}"'
    again = client.http.get(f"/d/{share}/v/{version}/style.css", headers={"If-None-Match": etag, **ACCEPT_ALL})
    assert client.http.get(f"/d/{share}/v/{version}/nope.css").status_code == 404
    assert again.status_code == 304
    # An edit keeps the version's files.
    edited = ok(post_json(client, f"/api/v1/documents/{result['document_id']}/edit",
                          {"edits": [{"old_string": "Report", "new_string": "Final"}]}, key))
    assert client.http.get(f"/d/{share}/v/{edited['version_id']}/img/chart.png", headers=ACCEPT_ALL).body == PNG


def test_a_file_at_the_deepest_level_is_served_and_one_deeper_is_named(client, workspace):
    """Paths may be 8 segments deep (docs/contract.md: the share link routes each depth, and
    each level grows the packaged template toward CloudFormation's 1 MB)."""
    _, key = workspace
    deep = "/".join(f"d{i}" for i in range(1, 8)) + "/deep.css"  # 8 segments
    result = ok(publish(client, key, files=[{"path": deep, "content": "p{color:blue}"}]))
    r = client.http.get(f"/d/{share_of(result)}/v/{result['version_id']}/{deep}", headers=ACCEPT_ALL)
    assert r.status_code == 200 and r.body == b"p{color:blue}"
    too_deep = "d0/" + deep
    error_body = error(publish(client, key, files=[{"path": too_deep, "content": "x"}]), 422)
    assert too_deep in error_body["message"] and "more than 8 levels deep" in error_body["message"]


@pytest.mark.parametrize("path, why", [
    ("../etc/passwd", "'..'"), ("/abs.png", "absolute"), ("img\\\\a.png", "backslash"), ("a//b.png", "empty"),
    ("a/" * 8 + "deep.png", "levels deep"), ("x" * 256, "at most 255 characters"), ("index.html", "page's own name"),
])
def test_unsafe_paths_are_422_naming_the_path(client, workspace, path, why):
    _, key = workspace
    err = error(publish(client, key, files=[{"path": path, "content": "x"}]), 422)
    assert why in err["message"] and err["code"] == "validation_error"
    assert err["details"]["fields"][0]["field"].startswith("files")


def test_duplicates_and_bad_base64_are_422(client, workspace):
    _, key = workspace
    err = error(publish(client, key, files=[{"path": "a.css", "content": "x"}, {"path": "a.css", "content": "y"}]), 422)
    assert "'a.css' appears more than once" in err["message"]
    err = error(publish(client, key, files=[{"path": "a.png", "content": "%%%", "encoding": "base64"}]), 422)
    assert err["details"]["fields"][0]["field"] == "files.0.content"


def test_too_many_or_too_large_files_are_413_bundle_too_large(client, workspace, monkeypatch):
    from chalicelib.domain import bundles

    _, key = workspace
    many = [{"path": f"f{i}.txt", "content": "x"} for i in range(201)]
    err = error(publish(client, key, files=many), 413)
    assert err["code"] == "bundle_too_large"
    assert err["details"] == {"limit_files": 200, "limit_bytes": 33554432}
    monkeypatch.setattr(bundles, "MAX_BYTES", 1000)
    err = error(publish(client, key, files=[{"path": "big.txt", "content": "x" * 1001}]), 413)
    assert err["code"] == "bundle_too_large"


# ------------------------------------------------------------------ uploads (multipart)

@BOTH
def test_multipart_upload_of_html_markdown_and_zip(client, workspace):
    _, key = workspace
    html = ok(upload(client, key, "report.html", b"<h1>From curl</h1>"))
    assert json.loads(client.http.get(f"/api/v1/documents/{html['document_id']}",
                                      headers={"X-Api-Key": key}).body)["title"] == "From curl"
    md = ok(upload(client, key, "notes.md", "# Notes\n\n- [x] é".encode(), note="first"))
    got = json.loads(client.http.get(f"/api/v1/documents/{md['document_id']}?include_source=true",
                                     headers={"X-Api-Key": key}).body)
    assert got["format"] == "markdown" and got["source"] == "# Notes\n\n- [x] é"
    assert got["versions"][0]["note"] == "first"
    archive = make_zip({"site/index.md": "# Site\n\n![chart](img/chart.png)", "site/img/chart.png": PNG,
                        "__MACOSX/site/._index.md": "junk"})
    site = ok(upload(client, key, "site.zip", archive, title="My site"))
    got = json.loads(client.http.get(f"/api/v1/documents/{site['document_id']}?include_html=true",
                                     headers={"X-Api-Key": key}).body)
    assert got["title"] == "My site"
    assert [f["path"] for f in got["versions"][0]["files"]] == ["img/chart.png"]  # the index is not listed
    assert '<img src="img/chart.png" alt="chart" />' in got["html"]
    r = client.http.get(f"/d/{share_of(site)}/v/{site['version_id']}/img/chart.png", headers=ACCEPT_ALL)
    assert r.body == PNG
    # A new version through upload, by document_id
    again = ok(upload(client, key, "report.htm", b"<title>Second</title>", document_id=html["document_id"]))
    assert again["version_number"] == 2


@pytest.mark.parametrize("name, data, expected", [
    ("notes.txt", b"hello", "must be one of .html"),
    ("none.zip", None, "no index.html or index.md"),
    ("link.zip", "symlink", "symbolic link"),
    ("bad.zip", b"PK\x03\x04 not really", "is not a readable .zip"),
    ("evil.zip", "traversal", "'..'"),
])
def test_upload_refusals_name_the_file_or_entry(client, workspace, name, data, expected):
    _, key = workspace
    if data is None:
        data = make_zip({"a/readme.html": "x", "b/other.html": "y"})
    elif data == "symlink":
        data = make_zip({"index.html": "<title>x</title>"}, symlinks={"secret": "/etc/passwd"})
    elif data == "traversal":
        data = make_zip({"index.html": "<title>x</title>", "../up.txt": "x"})
    err = error(upload(client, key, name, data), 422)
    assert expected in err["message"], err
    assert err["details"]["fields"][0]["field"] == "file"


def test_a_damaged_entry_is_422_naming_it(client, workspace):
    _, key = workspace
    archive = bytearray(make_zip({"index.html": "<title>x</title>" + "y" * 2000}))
    info = zipfile.ZipFile(io.BytesIO(bytes(archive))).getinfo("index.html")
    # Flip a byte of the stored CRC in the central directory and in the local header.
    crc = info.CRC.to_bytes(4, "little")
    fixed = bytes(archive).replace(crc, bytes([crc[0] ^ 0xFF]) + crc[1:])
    err = error(upload(client, key, "damaged.zip", fixed), 422)
    assert "'index.html'" in err["message"] and "CRC" in err["message"]


def test_other_content_types_are_415_and_multipart_without_a_file_is_422(client, workspace):
    _, key = workspace
    r = client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": "text/plain"}, body="x")
    assert error(r, 415)["code"] == "unsupported_media_type"
    body, content_type = encode_multipart_formdata({"title": "T"})
    r = client.http.post("/api/v1/publish", headers={"X-Api-Key": key, "Content-Type": content_type}, body=body)
    assert error(r, 422)["details"]["fields"][0]["field"] == "file"


def test_a_zip_bomb_is_refused_while_reading_bounded_in_time_and_memory(client, workspace):
    """42 MiB of zeros per entry compress to ~40 KiB; 4 entries claim 168 MiB. The
    reader stops at the 36 MiB budget: the request ends in well under 10 s and its
    peak Python allocation stays far below the expanded size."""
    _, key = workspace
    out = io.BytesIO()
    zero = b"\0" * (1024 * 1024)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("index.html", "<title>bomb</title>")
        for n in range(4):
            with archive.open(f"zeros{n}.bin", "w", force_zip64=True) as entry:
                for _ in range(42):
                    entry.write(zero)
    bomb = out.getvalue()
    assert len(bomb) < 1024 * 1024
    tracemalloc.start()
    started = time.perf_counter()
    r = upload(client, key, "bomb.zip", bomb)
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert error(r, 413)["code"] == "bundle_too_large"
    assert elapsed < 10
    assert peak < 120 * 1024 * 1024, peak  # the archive would expand to 168 MiB


def test_a_zip_entry_that_lies_about_its_size_is_refused(client, workspace):
    _, key = workspace
    archive = bytearray(make_zip({"index.html": "<title>x</title>", "big.txt": "z" * 50_000}))
    info = zipfile.ZipFile(io.BytesIO(bytes(archive))).getinfo("big.txt")
    declared = info.file_size.to_bytes(4, "little")
    lied = bytes(archive).replace(declared, (1000).to_bytes(4, "little"))
    err = error(upload(client, key, "lies.zip", lied), 422)
    assert "'big.txt'" in err["message"]


# ------------------------------------------------------------------ storage by content hash

@BOTH
def test_files_are_stored_once_by_content_hash_and_freed_with_their_last_version(api, workspace, ctx, clock):
    from chalicelib.services import content

    client = api  # the app on the injected clock
    ws, key = workspace
    first = ok(publish(client, key, files=files()))
    assert len(stored_files(ctx, ws.id)) == 2
    # Same files again (new version, another document): nothing new is stored.
    ok(publish(client, key, document_id=first["document_id"], files=files()))
    other = ok(publish(client, key, files=files(**{"extra.js": "1"})))
    assert len(stored_files(ctx, ws.id)) == 3
    # One file changed: one object more.
    changed = files()
    changed[1]["content"] = "body{color:blue}"
    ok(publish(client, key, document_id=first["document_id"], files=changed))
    assert len(stored_files(ctx, ws.id)) == 4
    # Deleting frees what no version uses, once nothing touched it for the grace period.
    clock.now = time.time() + content.FILE_GRACE_SECONDS + 60
    assert client.http.delete(f"/api/v1/documents/{other['document_id']}", headers={"X-Api-Key": key}).status_code == 204
    assert len(stored_files(ctx, ws.id)) == 3  # extra.js went; chart and both styles stay
    assert client.http.delete(f"/api/v1/documents/{first['document_id']}", headers={"X-Api-Key": key}).status_code == 204
    assert stored_files(ctx, ws.id) == []


@BOTH
def test_a_refused_bundle_leaves_no_objects_behind(client, workspace, ctx):
    ws, key = workspace
    for n in range(5):
        ok(publish(client, key, title=f"D{n}"))
    before = ctx.blobs.list_keys("")
    err = error(publish(client, key, files=files()), 403)  # a 6th document on the free plan
    assert err["code"] == "plan_limit_reached"
    assert ctx.blobs.list_keys("") == before


# ------------------------------------------------------------------ downloads

@BOTH
def test_downloads_of_html_markdown_and_bundles(client, workspace):
    _, key = workspace
    html = ok(publish(client, key, title="Q3 Report: Café!", files=None))
    r = client.http.get(f"/d/{share_of(html)}?download=1", headers=ACCEPT_ALL)
    assert r.status_code == 200 and r.body == PAGE.encode()
    assert r.headers["Content-Disposition"] == 'attachment; filename="q3-report-cafe.html"'
    md = ok(post_json(client, "/api/v1/publish", {"html": "# Ünïcode only ☃", "format": "markdown",
                                                  "title": "☃"}, key))
    r = client.http.get(f"/api/v1/documents/{md['document_id']}/download",
                        headers={"X-Api-Key": key, **ACCEPT_ALL})
    assert r.body == "# Ünïcode only ☃".encode()
    assert r.headers["Content-Disposition"] == 'attachment; filename="document.md"'
    bundle = ok(publish(client, key, title="Site", files=files()))
    r = client.http.get(f"/d/{share_of(bundle)}?download=1", headers=ACCEPT_ALL)
    assert r.headers["Content-Disposition"] == 'attachment; filename="site.zip"'
    archive = zipfile.ZipFile(io.BytesIO(r.body))
    assert sorted(archive.namelist()) == ["img/chart.png", "index.html", "style.css"]
    assert archive.read("img/chart.png") == PNG and archive.read("index.html") == PAGE.encode()
    # An older version by id (owner) and by ?v=N (share link)
    ok(publish(client, key, document_id=bundle["document_id"], title="Site", html="<p>v2</p>"))
    r = client.http.get(f"/api/v1/documents/{bundle['document_id']}/download?version_id={bundle['version_id']}",
                        headers={"X-Api-Key": key, **ACCEPT_ALL})
    assert r.headers["Content-Disposition"].endswith('site.zip"')
    r = client.http.get(f"/d/{share_of(bundle)}?download=1", headers=ACCEPT_ALL)
    assert r.headers["Content-Disposition"].endswith('site.html"') and r.body == b"<p>v2</p>"
    r = client.http.get(f"/d/{share_of(bundle)}?download=1&v=1", headers=ACCEPT_ALL)
    assert r.headers["Content-Disposition"].endswith('site.zip"')
    missing = client.http.get(f"/api/v1/documents/{bundle['document_id']}/download?version_id=v_nope",
                              headers={"X-Api-Key": key, **ACCEPT_ALL})
    assert missing.status_code == 404


def test_a_protected_download_needs_the_unlock(client, workspace, services):
    ws, key = workspace
    services.workspaces.set_plan(ws.id, "pro")
    doc = ok(publish(client, key, title="Secret"))
    r = client.http.put(f"/api/v1/documents/{doc['document_id']}/passphrase",
                        headers={"X-Api-Key": key, "Content-Type": "application/json"},
                        body=json.dumps({"passphrase": "correct horse battery staple"}))
    assert r.status_code == 204
    r = client.http.get(f"/d/{share_of(doc)}?download=1", headers=ACCEPT_ALL)
    assert "Content-Disposition" not in r.headers and b"Report" not in r.body
    assert b"protected" in r.body


@BOTH
def test_restoring_an_old_version_keeps_its_markdown_source_and_files(client, workspace, services):
    from chalicelib.services.editing import EditingService

    ws, key = workspace
    first = ok(post_json(client, "/api/v1/publish", {"html": "# One\n\n![c](img/chart.png)", "format": "markdown",
                                                     "files": files()[:1]}, key))
    ok(publish(client, key, document_id=first["document_id"], title="Two"))  # plain HTML, no files
    from chalicelib.services.auth import credentials_from_headers

    EditingService(services.documents.ctx).restore_version(credentials_from_headers({"x-api-key": key}),
                                                           first["document_id"], 1)
    doc = json.loads(client.http.get(f"/api/v1/documents/{first['document_id']}?include_source=true",
                                     headers={"X-Api-Key": key}).body)
    assert doc["version_count"] == 3 and doc["versions"][-1]["note"] == "Restored version 1"
    assert doc["format"] == "markdown" and doc["source"] == "# One\n\n![c](img/chart.png)"
    assert [f["path"] for f in doc["versions"][-1]["files"]] == ["img/chart.png"]
    share = share_of(first)
    r = client.http.get(f"/d/{share}/v/{doc['latest_version_id']}/img/chart.png", headers=ACCEPT_ALL)
    assert r.status_code == 200 and r.body == PNG


@BOTH
def test_mcp_publishes_files_beside_the_page(client, workspace):
    from tests.http.test_mcp import call

    _, key = workspace
    result = call(client, key, "publish_document", {"html": PAGE, "files": files()})
    assert result["isError"] is False, result
    doc_id = result["structuredContent"]["document_id"]
    got = call(client, key, "get_document", {"document_id": doc_id})["structuredContent"]
    assert sorted(f["path"] for f in got["versions"][0]["files"]) == ["img/chart.png", "style.css"]
    bad = call(client, key, "publish_document", {"html": PAGE, "files": [{"path": "../x", "content": "x"}]})
    assert bad["isError"] is True and bad["content"][0]["text"].startswith("validation_error:")


@pytest.mark.aws
def test_deployed_a_file_too_large_for_lambda_is_served_by_s3_through_a_presigned_url(client, workspace, storage,
                                                                                        monkeypatch):
    from chalicelib.domain import limits

    monkeypatch.setattr(limits, "INLINE_RESPONSE_BYTES", 1000)
    _, key = workspace
    result = ok(publish(client, key, files=[{"path": "big.txt", "content": "x" * 2000}, *files()]))
    r = client.http.get(f"/d/{share_of(result)}/v/{result['version_id']}/big.txt", headers=ACCEPT_ALL)
    assert r.status_code == 302
    location = r.headers["Location"]
    assert "X-Amz-Signature=" in location and "X-Amz-Expires=60" in location
    small = client.http.get(f"/d/{share_of(result)}/v/{result['version_id']}/style.css", headers=ACCEPT_ALL)
    assert small.status_code == 200


def test_a_new_version_keeps_the_title_unless_a_title_is_sent(client, workspace):
    """Issue 37, item 2: a zip uploaded as a new version renamed "Weekly report" to "Site" (the
    zip's <title>); the CLI, the Action and docs/ci.md say a new version keeps the title."""
    _, key = workspace
    first = ok(post_json(client, "/api/v1/publish", {"format": "markdown", "html": "# Weekly report\n\nhi"}, key))
    doc_id = first["document_id"]

    def title() -> str:
        return json.loads(client.http.get(f"/api/v1/documents/{doc_id}", headers={"X-Api-Key": key}).body)["title"]

    assert title() == "Weekly report"
    ok(upload(client, key, "site.zip", make_zip({"index.html": "<title>Site</title><p>zip</p>"}), document_id=doc_id))
    assert title() == "Weekly report"
    ok(post_json(client, "/api/v1/publish", {"document_id": doc_id, "html": "<title>Other</title><p>x</p>"}, key))
    assert title() == "Weekly report"
    ok(upload(client, key, "site.zip", make_zip({"index.html": "<title>Site</title>"}), document_id=doc_id,
              title="Renamed"))
    assert title() == "Renamed"
