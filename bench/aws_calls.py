"""AWS round trips per operation, counted with botocore `before-call` hooks on
the app's own cached clients, under moto in-process.

    .venv/bin/python -m bench.aws_calls

tests/http/test_round_trips.py runs the same scenario and asserts the targets.
Share views are measured only when the app has `/d/` routes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional
from urllib.parse import urlparse

from bench._common import count_aws_calls, fake_aws_env, print_header, print_table

# Target round trips per operation (None: reported, no target).
# Issue 24 (second part): every write also reads the workspace's sliding write log (one
# BatchGetItem of its 8 shards; the workspace is known only once the key is read), +1.
# Issue 33: a version's quota keeps room for the workspace's pending uploads (one GetItem
# of their lease item), +1 on publish and edit; /me reports them in `usage`, +1.
TARGETS: dict[str, Optional[int]] = {
    "publish (new document)": 5,
    "publish (new version)": 5,
    "publish with Idempotency-Key": 5,
    "publish replay (same Idempotency-Key)": None,
    # +1 Query of the document's view counters (views_total, last_viewed_at).
    "get without html": 3,
    "get with html": 4,
    # List and find: 2, plus one small Query of the view totals per listed document (views_total,
    # last_viewed_at on list items), 8 at a time in parallel; 2 documents listed here, 1 found;
    # plus one BatchGetItem of the page's documents (their review_state: the listing index does
    # not project it, and an index's projection cannot change on a deployed table).
    "list": 5,
    "find (?query=)": 4,
    "edit": 6,
    "/me": 3,
    "update (PATCH)": None,
    "delete": None,
    "share view (unprotected)": 2,
    "share view (again)": 2,
    "share content (version HTML)": 3,
    "share content, If-None-Match (304)": 2,
}


@dataclass
class Measured:
    name: str
    status: int
    calls: list[str]

    @property
    def count(self) -> int:
        return len(self.calls)


def has_share_routes(app) -> bool:
    return any(path.startswith("/d/") for path in app.routes)


def run_operations(http, api_key: str, app=None) -> dict[str, Measured]:
    """Drive every operation once through `http` (chalice.test.Client().http)
    and count the AWS calls each makes."""
    results: dict[str, Measured] = {}
    auth = {"X-Api-Key": api_key}
    json_auth = {**auth, "Content-Type": "application/json"}

    def run(name: str, method: str, path: str, body=None, headers=None) -> dict:
        with count_aws_calls() as log:
            response = getattr(http, method)(path, headers=headers or auth,
                                             **({"body": json.dumps(body)} if body is not None else {}))
        results[name] = Measured(name, response.status_code, list(log.calls))
        assert response.status_code < 400, (name, response.status_code, response.body[:300])
        is_json = "json" in (response.headers.get("content-type") or response.headers.get("Content-Type") or "")
        return json.loads(response.body) if response.body and is_json else {}

    html = "<h1>Round trips</h1><p>" + "lorem ipsum " * 200 + "</p><p>tail</p>"
    doc = run("publish (new document)", "post", "/api/v1/publish", {"title": "Bench", "html": html}, json_auth)
    doc_id = doc["document_id"]
    run("publish (new version)", "post", "/api/v1/publish",
        {"title": "Bench", "html": html + "<p>v2</p>", "document_id": doc_id}, json_auth)
    idem_headers = {**json_auth, "Idempotency-Key": "bench-key-1"}
    run("publish with Idempotency-Key", "post", "/api/v1/publish", {"title": "Idem", "html": html}, idem_headers)
    run("publish replay (same Idempotency-Key)", "post", "/api/v1/publish",
        {"title": "Idem", "html": html}, idem_headers)
    run("get without html", "get", f"/api/v1/documents/{doc_id}")
    run("get with html", "get", f"/api/v1/documents/{doc_id}?include_html=true")
    run("list", "get", "/api/v1/documents?limit=10")
    run("find (?query=)", "get", "/api/v1/documents?query=bench")
    edited = run("edit", "post", f"/api/v1/documents/{doc_id}/edit",
                 {"edits": [{"old_string": "<p>tail</p>", "new_string": "<p>end</p>"}]}, json_auth)
    run("/me", "get", "/api/v1/me")
    run("update (PATCH)", "patch", f"/api/v1/documents/{doc_id}", {"title": "Renamed"}, json_auth)
    if app is not None and has_share_routes(app):
        share_path = urlparse(doc["share_url"]).path
        run("share view (unprotected)", "get", share_path, headers={})
        run("share view (again)", "get", share_path, headers={})
        if "/d/{share_id}/v/{version_id}" in app.routes:
            content = f"{share_path}/v/{edited['version_id']}"
            with count_aws_calls() as log:
                response = http.get(content, headers={"Accept-Encoding": "gzip"})
            assert response.status_code == 200, response.status_code
            results["share content (version HTML)"] = Measured("share content (version HTML)", 200, list(log.calls))
            etag = response.headers.get("etag") or response.headers.get("ETag")
            run("share content, If-None-Match (304)", "get", content,
                headers={"Accept-Encoding": "gzip", "If-None-Match": etag})
    run("delete", "delete", f"/api/v1/documents/{doc_id}")
    return results


def main() -> None:
    fake_aws_env()
    import moto

    with moto.mock_aws():
        from chalice.test import Client

        from app import app
        from chalicelib.adapters.aws.schema import ensure_storage
        from chalicelib import wiring
        from chalicelib.services.workspaces import WorkspaceService

        ensure_storage()
        _, key = WorkspaceService(wiring.default_context()).create_workspace("Bench", "free")
        with Client(app) as client:
            results = run_operations(client.http, key.api_key, app)

    print_header("AWS round trips per operation (moto in-process, botocore before-call hooks)")
    rows = []
    for name, target in TARGETS.items():
        m = results.get(name)
        if m is None:
            rows.append([name, "-", "-" if target is None else target, "skipped (no /d/ route)", ""])
            continue
        verdict = "" if target is None else ("met" if m.count <= target else "MISSED")
        rows.append([name, m.count, "-" if target is None else target, verdict, ", ".join(m.calls)])
    print_table(["operation", "calls", "target", "", "calls made"], rows)


if __name__ == "__main__":
    main()
