"""Small test helpers."""
from __future__ import annotations

import json


class FakeClock:
    """An injectable clock: tests move time instead of sleeping."""

    def __init__(self, start: float = 1_795_000_000.0):
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def auth(key: str) -> dict:
    return {"X-Api-Key": key, "Content-Type": "application/json"}


def post_json(client, path: str, body, key: str | None = None, headers: dict | None = None):
    h = {"Content-Type": "application/json"}
    if key:
        h["X-Api-Key"] = key
    h.update(headers or {})
    return client.http.post(path, headers=h, body=json_bytes(body))


def json_bytes(body) -> bytes:
    """JSON as UTF-8, non-ASCII kept as is (as real clients send it: a 4 MiB
    Japanese document escaped as \\uXXXX would pass the 6 MiB body cap); a
    lone surrogate, which UTF-8 cannot carry, is sent escaped."""
    try:
        return json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body).encode("ascii")


def publish_raw(client, key: str | None, headers: dict | None = None, **body):
    """POST /api/v1/publish (title "Doc", html "<p>x</p>" unless given): the response."""
    return post_json(client, "/api/v1/publish", {"title": "Doc", "html": "<p>x</p>", **body}, key, headers)


def publish(client, key: str, headers: dict | None = None, **body) -> dict:
    """Publish (as `publish_raw`), expect 200: the answer's JSON plus its `share_id`."""
    r = publish_raw(client, key, headers, **body)
    assert r.status_code == 200, r.body
    doc = json.loads(r.body)
    doc["share_id"] = doc["share_url"].rsplit("/", 1)[1]
    return doc


def run_together(targets):
    """Start every callable at the same instant (a barrier); return (results, failures)
    where failures are the exceptions' class names."""
    import threading

    barrier = threading.Barrier(len(targets))
    results, failures = [], []

    def run(target):
        barrier.wait()
        try:
            results.append(target())
        except Exception as exc:  # noqa: BLE001 - the caller asserts on what failed
            failures.append(type(exc).__name__)

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, failures


# DynamoDB key prefixes -> the SQLite table holding the same records.
_KINDS = {"WS": "workspaces", "KEY": "api_keys", "SHARE": "share_links", "IDEM": "idempotency",
          "RATE": "rate_logs", "FB": "feedback", "USER": "users", "SESSION": "sessions", "EV": "events",
          "WH": "webhooks", "WHD": "webhook_deliveries", "ACT": "activity", "ACCT": "account_tokens",
          "EXPORT": "exports", "EXPORTS": "exports", "SIGNKEYS": "signing_keys",
          "REMOVED": "member_removals"}


def stored_records(ctx) -> list[tuple[str, dict]]:
    """Everything the storage under `ctx` holds, as (kind, record) with the SQLite
    table names as kinds on either adapter: for tests that look at raw storage."""
    if ctx.repos.kind == "aws":
        from chalicelib import config
        from chalicelib.adapters.aws import clients as aws
        from chalicelib.adapters.aws.table import from_item

        records = []
        for page in aws.dynamodb().get_paginator("scan").paginate(TableName=config.table_name()):
            for raw in page.get("Items", []):
                item = from_item(raw)
                prefix = item["PK"].split("#", 1)[0]
                kind = ("versions" if item["SK"].startswith("V#") else "documents") if prefix == "DOC" \
                    else "members" if item["SK"].startswith("MEMBER#") \
                    else "feedback_replies" if prefix == "FB" and item["SK"].startswith("R#") else _KINDS[prefix]
                records.append((kind, item))
        return records
    conn = ctx.documents.db.connection()
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return [(table, dict(row)) for table in tables
            for row in conn.execute(f"SELECT * FROM {table}")]  # noqa: S608 - names from sqlite_master


def sqlite_statements(db, call) -> list[str]:
    """The statements `call` ran on SQLite database `db` (its connection's trace callback)."""
    conn = db.connection()
    ran: list[str] = []
    conn.set_trace_callback(ran.append)
    try:
        call()
    finally:
        conn.set_trace_callback(None)
    return ran


# A page's files for the service-level tests of bundles (tests/contract).
BUNDLE_CSS = "body { color: teal }\n" * 50   # 1,050 bytes
BUNDLE_JS = "console.log(1);\n" * 40          # 640 bytes


def publish_bundle(services, key: str, html: str, files, document_id=None):
    """Publish `html` with `files` ([(path, content)]) through the document service."""
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key

    request = PublishRequest(title="Bundle", html=html, document_id=document_id,  # type: ignore[call-arg]
                             files=[{"path": p, "content": c} for p, c in files])
    return services.documents.publish(credentials_from_key(key), request).response

