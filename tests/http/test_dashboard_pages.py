"""The dashboard package (issue 25, item 4): pages ask the page-data service, the
inbox reads its documents in one query, forms are parsed by python-multipart,
and no rule the services hold is checked again in the dashboard."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from tests.http.test_dashboard import doc_id_from, upload

DASHBOARD = Path(__file__).resolve().parents[2] / "chalicelib" / "entrypoints" / "dashboard"


@pytest.fixture(autouse=True)
def cheap_argon2(fast_argon2):
    """Hash passwords cheaply."""


def _set_plan_pro(dash):
    from chalicelib import wiring as registry

    workspace_id = re.search(r"<code>(ws_[^<]+)</code>", dash.get("/dashboard/workspace").text).group(1)
    registry.workspaces().set_plan(workspace_id, "pro")


def _documents_with_feedback(owner, client, count: int) -> list[str]:
    ids = []
    for n in range(count):
        document_id = doc_id_from(upload(owner, f"<p>doc {n}</p>".encode(), title=f"Doc {n}"))
        share = re.search(r'href="https?://[^/"]+(/d/[A-Za-z0-9_-]+)"',
                          owner.get(f"/dashboard/documents/{document_id}").text).group(1)
        r = client.http.post(share + "/feedback", headers={"Content-Type": "application/json"},
                             body=json.dumps({"message": f"Note on doc {n}"}))
        assert r.status_code == 201, r.body
        ids.append(document_id)
    return ids


def _count_document_reads(monkeypatch) -> dict:
    """Count every call of the document repository (the storage port) by method."""
    from chalicelib.wiring import default_context

    repo = default_context().documents
    counts: dict[str, int] = {}
    for name in [n for n in dir(repo) if not n.startswith("_") and callable(getattr(repo, n))]:
        original = getattr(repo, name)

        def counted(*args, _name=name, _original=original, **kwargs):
            counts[_name] = counts.get(_name, 0) + 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(repo, name, counted)
    return counts


def test_the_inbox_reads_its_documents_in_one_query_whatever_their_number(owner, client, monkeypatch):
    """Measured on the old dashboard: one `get_with_versions` per document on the
    page (2 documents: 2 reads, 6 documents: 6)."""
    _set_plan_pro(owner)
    ids = _documents_with_feedback(owner, client, 6)
    counts = _count_document_reads(monkeypatch)
    page = owner.get("/dashboard/feedback")
    assert page.status == 200
    for n, document_id in enumerate(ids):
        assert f"Note on doc {n}" in page.text and f'href="/dashboard/documents/{document_id}"' in page.text
    assert "?v=1" in page.text  # the version each was given on
    # Whatever the number of documents: the filter's list (with one read of its documents' review
    # states) and one read of the page's documents.
    assert counts == {"list_page": 1, "get_many": 2}, counts
    counts.clear()
    filtered = owner.get(f"/dashboard/feedback?document_id={ids[0]}")
    assert "Note on doc 0" in filtered.text and "Note on doc 1" not in filtered.text
    assert counts == {"list_page": 1, "get": 1, "get_many": 2}, counts  # + the filter's document


@pytest.mark.aws
def test_the_inbox_makes_the_same_dynamodb_calls_for_one_or_many_documents(owner, client):
    from bench._common import count_aws_calls

    _set_plan_pro(owner)
    ids = _documents_with_feedback(owner, client, 5)
    with count_aws_calls() as all_of_them:
        assert "Note on doc 4" in owner.get("/dashboard/feedback").text
    with count_aws_calls() as one_of_them:
        assert "Note on doc 2" in owner.get(f"/dashboard/feedback?document_id={ids[2]}").text
    assert all_of_them.calls.count("dynamodb.BatchGetItem") == one_of_them.calls.count("dynamodb.BatchGetItem")
    assert len(all_of_them.calls) <= len(one_of_them.calls) + 1, (all_of_them.calls, one_of_them.calls)


def test_a_file_holding_the_boundary_text_is_uploaded_byte_for_byte(owner, client):
    """The old hand-written parser split the body on `--boundary` anywhere, so a
    file that contains that text (not at a line start) was cut short."""
    from chalicelib import wiring as registry
    from chalicelib.services.access import Actor

    boundary = "----docpubBoundary7MA4YWxk"
    html = f"<p>before --{boundary} inside</p>\r\n<p>after ünïcode</p>\n".encode()
    csrf = owner.token()
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"csrf_token\"\r\n\r\n{csrf}\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nBoundary test\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b.html\"\r\n"
            "Content-Type: text/html\r\n\r\n").encode() + html + f"\r\n--{boundary}--\r\n".encode()
    page = owner._keep(client.http.post("/dashboard/upload", body=body, headers=owner._headers(
        {"Content-Type": f"multipart/form-data; boundary={boundary}"})))
    assert page.status == 303, page.text
    document_id = doc_id_from(page)
    workspace_id = re.search(r"<code>(ws_[^<]+)</code>", owner.get("/dashboard/workspace").text).group(1)
    stored = registry.documents().get(Actor(workspace_id), document_id, include_html=True)
    assert stored.html.encode() == html and stored.title == "Boundary test"


@pytest.mark.parametrize("content_type,body", [
    ("multipart/form-data", b"no boundary declared"),
    ("multipart/form-data; boundary=abc", b"\x00\x01 not multipart at all"),
    ("multipart/form-data; boundary=abc", b"--abc\r\nContent-Disposition: form-data; name=\"x\"\r\n"),
])
def test_an_unreadable_form_is_a_plain_error_page_not_a_500(owner, client, content_type, body):
    r = client.http.post("/dashboard/upload", body=body, headers=owner._headers({"Content-Type": content_type}))
    text = r.body.decode() if isinstance(r.body, bytes) else r.body
    assert 400 <= r.status_code < 500, (r.status_code, text[:300])
    assert "Traceback" not in text


def test_an_empty_file_input_is_no_file(owner):
    page = owner.post_multipart("/dashboard/upload", {"title": "Nothing"}, {"file": ("", b"")}, csrf=owner.token())
    assert page.status == 422 and "choose a file to upload (.html, .md or .zip)" in page.text


def test_the_dashboard_holds_no_rule_and_reads_no_storage():
    """Pages parse forms and call services: no id-shape regex, no passphrase or
    status rules, no storage port, adapter or service context."""
    found = []
    for path in sorted(DASHBOARD.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                module = getattr(node, "module", None) or ""
                names = [module] + [a.name for a in node.names]
                if any(n.startswith(("chalicelib.ports", "chalicelib.adapters")) for n in names):
                    found.append(f"{path.name}:{node.lineno} imports storage")
            if isinstance(node, ast.Attribute) and node.attr == "ctx":
                found.append(f"{path.name}:{node.lineno} reaches into a service context")
        for pattern in (r"0-9a-fA-F-\]\{36\}", r"len\(passphrase\)", r'"open", "resolved"'):
            if re.search(pattern, text):
                found.append(f"{path.name}: {pattern}")
    assert found == []


def test_page_data_defaults_for_links_typed_by_hand(owner):
    """An unknown status shows open feedback and a filter that names no document shows all."""
    page = owner.get("/dashboard/feedback?status=bogus&document_id=not-a-document")
    assert page.status == 200
    assert re.search(r'<option value="open"\s+selected>', page.text)
