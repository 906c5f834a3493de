"""`docpub publish report.md`, `docpub publish ./site/`, `docpub download ID`, and large
files through an upload, against the real local stack (issue 26)."""
from __future__ import annotations

import io
import os
import zipfile

import pytest

pytestmark = pytest.mark.e2e


def test_publish_markdown_is_rendered_and_keeps_its_source(cli, api, tmp_path):
    report = tmp_path / "report.md"
    report.write_text("# Weekly `report`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", encoding="utf-8")
    result = cli.json("publish", str(report))
    doc = api.get(f"/api/v1/documents/{result['document_id']}?include_source=true&include_html=true").json()
    assert doc["title"] == "Weekly report"
    assert doc["format"] == "markdown" and doc["source"] == report.read_text(encoding="utf-8")
    assert "<table>" in doc["html"]


def test_publish_a_folder_as_a_bundle_then_download_it(cli, api, tmp_path):
    site = tmp_path / "site"
    (site / "img").mkdir(parents=True)
    (site / "index.html").write_text('<title>Site</title><img src="img/a.png"><link href="s.css" rel=stylesheet>')
    (site / "img" / "a.png").write_bytes(b"\x89PNG fake")
    (site / "s.css").write_text("body{}")
    (site / ".git").mkdir()
    (site / ".git" / "HEAD").write_text("ref")  # left out
    result = cli.json("publish", str(site))
    doc = api.get(f"/api/v1/documents/{result['document_id']}").json()
    assert doc["title"] == "Site"
    assert sorted(f["path"] for f in doc["versions"][0]["files"]) == ["img/a.png", "s.css"]
    out = tmp_path / "out"
    out.mkdir()
    saved = cli.json("download", result["document_id"], "-o", str(out))
    assert saved["path"].endswith("site.zip")
    archive = zipfile.ZipFile(saved["path"])
    assert sorted(archive.namelist()) == ["img/a.png", "index.html", "s.css"]
    assert archive.read("img/a.png") == b"\x89PNG fake"


def test_a_large_folder_goes_through_an_upload_on_its_own(cli, api, tmp_path):
    site = tmp_path / "big"
    site.mkdir()
    (site / "index.md").write_text("# Big one\n\n[data](data.bin)\n")
    (site / "data.bin").write_bytes(os.urandom(7 * 1024 * 1024))  # over the 6 MiB request cap
    result = cli.json("publish", str(site))
    doc = api.get(f"/api/v1/documents/{result['document_id']}").json()
    assert doc["title"] == "Big one"
    assert doc["versions"][0]["files"][0]["size_bytes"] == 7 * 1024 * 1024
    again = cli.json("publish", str(site), "--document", result["document_id"], "--note", "same bytes")
    assert again["version_number"] == 2


def test_python_client_publish_with_files_and_download(stack, pro_key):
    from docpub import Client

    with Client(stack.base_url, pro_key) as client:
        result = client.publish("# Notes\n\n![x](x.svg)", format="markdown",
                                files=[{"path": "x.svg", "content": "<svg xmlns='http://www.w3.org/2000/svg'/>"}])
        name, data = client.download(result["document_id"])
    assert name == "notes.zip"
    assert sorted(zipfile.ZipFile(io.BytesIO(data)).namelist()) == ["index.md", "x.svg"]


def test_export_the_workspace_as_one_zip(cli, api, tmp_path):
    """`docpub export` (issue 36): starts the export, waits while the stack builds it, and
    streams the zip from its download URL (no key sent there)."""
    made = cli.json("publish", "-", "--title", "Exported", input="<p>everything</p>")
    target = tmp_path / "all.zip"
    saved = cli.json("export", "-o", str(target))
    assert saved["path"] == str(target) and saved["size_bytes"] == target.stat().st_size
    archive = zipfile.ZipFile(target)
    assert archive.read(f"documents/{made['document_id']}/versions/1/content.html") == b"<p>everything</p>"
    assert "manifest.json" in archive.namelist()
