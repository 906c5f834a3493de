"""List, find, update and delete."""
import json
import threading



from tests.helpers import publish  # noqa: E402


def listing(client, key, query=""):
    r = client.http.get(f"/api/v1/documents{query}", headers={"X-Api-Key": key})
    assert r.status_code == 200, r.body
    return json.loads(r.body)


def pro_key(services):
    return services.workspaces.create_workspace("Pro", "pro")[1].api_key


def test_list_newest_updated_first_with_summary_fields(api, services, clock):
    key = pro_key(services)
    a = publish(api, key, title="A")
    clock.advance(1)
    b = publish(api, key, title="B", description="about b")
    clock.advance(1)
    publish(api, key, title="A2", document_id=a["document_id"])  # a is now the most recently updated
    body = listing(api, key)
    assert [d["document_id"] for d in body["documents"]] == [a["document_id"], b["document_id"]]
    assert body["next_cursor"] is None
    first = body["documents"][0]
    assert set(first) == {"document_id", "title", "description", "share_url", "created_at", "updated_at",
                          "version_count", "latest_version_id", "open_feedback_count",
                          "share_enabled", "share_expires_at", "share_access", "review_state", "views_total",
                              "last_viewed_at"}
    assert first["version_count"] == 2 and first["title"] == "A2"
    assert first["created_at"].endswith("Z") and first["updated_at"] > first["created_at"]


def test_paging_returns_every_document_once(api, services, clock):
    key = pro_key(services)
    ids = []
    for i in range(7):
        ids.append(publish(api, key, title=f"D{i}")["document_id"])
        clock.advance(1)
    seen, cursor = [], None
    while True:
        query = "?limit=3" + (f"&cursor={cursor}" if cursor else "")
        page = listing(api, key, query)
        seen += [d["document_id"] for d in page["documents"]]
        # A document added while paging appears before the cursor, never twice.
        if len(seen) == 3:
            ids.append(publish(api, key, title="late")["document_id"])
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == list(reversed(ids[:7]))
    assert len(set(seen)) == 7


def test_list_limits_and_bad_cursor(api, workspace):
    _, key = workspace
    for bad in ("?limit=0", "?limit=101", "?limit=abc", "?cursor=%%%garbage", "?cursor=eyJhIjoxfQ", "?extra=1"):
        r = api.http.get(f"/api/v1/documents{bad}", headers={"X-Api-Key": key})
        assert r.status_code == 422, bad
        assert json.loads(r.body)["error"]["code"] == "validation_error"


def test_find_ranks_exact_then_prefix_then_contains(api, services, clock):
    key = pro_key(services)
    contains = publish(api, key, title="Weekly report draft")
    clock.advance(1)
    in_description = publish(api, key, title="Notes", description="the REPORT of March")
    clock.advance(1)
    prefix = publish(api, key, title="Report for Q3")
    clock.advance(1)
    exact = publish(api, key, title="report")
    clock.advance(1)
    publish(api, key, title="Unrelated")
    found = listing(api, key, "?query=Report")["documents"]
    assert [d["document_id"] for d in found] == [exact["document_id"], prefix["document_id"],
                                                 contains["document_id"], in_description["document_id"]]
    page = listing(api, key, "?query=report&limit=2")
    assert len(page["documents"]) == 2 and page["next_cursor"]
    rest = listing(api, key, f"?query=report&limit=2&cursor={page['next_cursor']}")
    assert [d["document_id"] for d in rest["documents"]] == [contains["document_id"], in_description["document_id"]]
    assert rest["next_cursor"] is None


def test_patch_changes_title_and_description_only(api, workspace):
    _, key = workspace
    doc = publish(api, key, title="Old", description="d")
    r = api.http.patch(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key, "Content-Type": "application/json"},
                       body=json.dumps({"title": "New"}))
    assert r.status_code == 200, r.body
    body = json.loads(r.body)
    assert body["title"] == "New" and body["description"] == "d"
    assert body["version_count"] == 1 and len(body["versions"]) == 1
    r = api.http.patch(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key, "Content-Type": "application/json"},
                       body=json.dumps({"description": ""}))
    assert json.loads(r.body)["description"] == ""


def test_patch_refuses_other_fields_and_empty_body(api, workspace):
    _, key = workspace
    doc = publish(api, key)
    path = f"/api/v1/documents/{doc['document_id']}"
    headers = {"X-Api-Key": key, "Content-Type": "application/json"}
    for body in ({"html": "<p>n</p>"}, {"note": "n"}, {"document_id": doc["document_id"]}, {"colour": 1}, {},
                 {"title": ""}, {"title": "x" * 501}, {"description": "d" * 5001}):
        r = api.http.patch(path, headers=headers, body=json.dumps(body))
        assert r.status_code == 422, body
    assert publish(api, key, document_id=doc["document_id"])["version_number"] == 2


def test_delete_removes_everything(api, services, workspace, ctx):
    ws, key = workspace
    doc = publish(api, key)
    publish(api, key, document_id=doc["document_id"], html="<p>2</p>")
    keep = publish(api, key, title="keep")
    assert len(ctx.blobs.list_keys("documents/")) == 3
    r = api.http.delete(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key})
    assert r.status_code == 204 and r.body in (b"", None)
    assert api.http.get(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key}).status_code == 404
    assert [d["document_id"] for d in listing(api, key)["documents"]] == [keep["document_id"]]
    assert services.workspaces.get_workspace(ws.id).document_count == 1
    remaining = [k for k, _ in ctx.blobs.list_keys("documents/")]
    assert all(doc["document_id"] not in k for k in remaining) and len(remaining) == 1
    share_id = doc["share_url"].rsplit("/", 1)[1]
    assert ctx.documents.get_share(share_id) is None
    assert ctx.documents.get_with_versions(doc["document_id"]) == (None, [])
    assert api.http.delete(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key}).status_code == 404


def test_interrupted_delete_is_finished_by_retry(api, services, workspace, ctx, monkeypatch):
    from chalicelib.services.documents import DocumentService

    ws, key = workspace
    doc = publish(api, key)

    def crash(self, _doc):
        raise RuntimeError("lambda cut off")

    with monkeypatch.context() as patch:
        patch.setattr(DocumentService, "finish_delete", crash)
        r = api.http.delete(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key})
        assert r.status_code == 500
    # Half-way: invisible everywhere, not counted, but not yet cleaned.
    assert api.http.get(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key}).status_code == 404
    assert listing(api, key)["documents"] == []
    assert services.workspaces.get_workspace(ws.id).document_count == 0
    assert ctx.blobs.list_keys("documents/")
    r = api.http.delete(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key})
    assert r.status_code == 204
    assert ctx.blobs.list_keys("documents/") == []
    assert ctx.documents.get_with_versions(doc["document_id"]) == (None, [])


def test_appending_to_a_document_being_deleted_is_404(services, workspace):
    from chalicelib.errors import NotFound
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key

    _, key = workspace
    credentials = credentials_from_key(key)
    doc = services.documents.publish(credentials, PublishRequest(title="t", html="<p/>")).response
    stored = services.documents.ctx.documents.get(doc.document_id)
    services.documents.ctx.documents.begin_delete(stored)
    try:
        services.documents.publish(credentials, PublishRequest(title="t", html="<p/>", document_id=doc.document_id))
        raise AssertionError("expected NotFound")
    except NotFound:
        pass


def test_concurrent_deletes_decrement_once(services, workspace):
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key

    ws, key = workspace
    credentials = credentials_from_key(key)
    doc = services.documents.publish(credentials, PublishRequest(title="t", html="<p/>")).response
    services.documents.publish(credentials, PublishRequest(title="u", html="<p/>"))
    errors = []

    def go():
        try:
            services.documents.delete(credentials, doc.document_id)
        except Exception as exc:  # noqa: BLE001
            errors.append(type(exc).__name__)

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert services.workspaces.get_workspace(ws.id).document_count == 1
    assert set(errors) <= {"NotFound"}


def test_cursor_of_another_workspace_is_refused(api, services, clock):
    key = pro_key(services)
    other = services.workspaces.create_workspace("Other", "pro")[1].api_key
    for i in range(3):
        publish(api, key, title=f"d{i}")
        clock.advance(1)
    cursor = listing(api, key, "?limit=1")["next_cursor"]
    r = api.http.get(f"/api/v1/documents?cursor={cursor}", headers={"X-Api-Key": other})
    assert r.status_code == 422
    assert json.loads(r.body)["error"]["details"]["fields"][0]["field"] == "cursor"


def test_version_fields_are_the_same_with_and_without_html(api, workspace):
    _, key = workspace
    doc = publish(api, key)  # no note
    path = f"/api/v1/documents/{doc['document_id']}"
    plain = json.loads(api.http.get(path, headers={"X-Api-Key": key}).body)
    full = json.loads(api.http.get(path + "?include_html=true", headers={"X-Api-Key": key}).body)
    assert "html" not in plain and full["html"] == "<p>x</p>"
    assert plain["versions"] == full["versions"]
    assert plain["versions"][0]["note"] is None


def test_document_ids_are_case_insensitive(api, workspace):
    _, key = workspace
    doc = publish(api, key)
    upper = doc["document_id"].upper()
    r = api.http.get(f"/api/v1/documents/{upper}", headers={"X-Api-Key": key})
    assert r.status_code == 200 and json.loads(r.body)["document_id"] == doc["document_id"]
    assert publish(api, key, document_id=upper)["document_id"] == doc["document_id"]
    assert api.http.delete(f"/api/v1/documents/{upper}", headers={"X-Api-Key": key}).status_code == 204
    assert api.http.get(f"/api/v1/documents/{doc['document_id']}", headers={"X-Api-Key": key}).status_code == 404
