"""Issue 33 finding 5 over REST: pending uploads are capped (10 per workspace, 429 past
it) and their declared sizes count in `/me`'s usage and against the storage quota
(403 `plan_limit_reached`). Old code: every creation answered 201 and `storage_bytes`
stayed 0 (150 uploads in 7.9 s; 8 x 36 MiB stored for free)."""
from __future__ import annotations

import json

from tests.helpers import auth
from tests.http.test_content_uploads import ticket

MIB = 1024 * 1024


def _usage(client, key) -> dict:
    return json.loads(client.http.get("/api/v1/me", headers=auth(key)).body)["workspace"]["usage"]


def test_pending_uploads_are_capped_and_counted(client, workspace):
    _, key = workspace
    created = [ticket(client, key, "site.zip", 36 * MIB).status_code for _ in range(2)]
    assert created == [201, 201]
    assert _usage(client, key)["storage_bytes"] == 72 * MIB
    assert _usage(client, key)["pending_upload_bytes"] == 72 * MIB
    over = ticket(client, key, "site.zip", 36 * MIB)
    assert over.status_code == 403, over.body
    assert json.loads(over.body)["error"]["code"] == "plan_limit_reached"
    statuses = [ticket(client, key, "page.html", 1000).status_code for _ in range(9)]
    assert statuses == [201] * 8 + [429]
    refused = json.loads(ticket(client, key, "page.html", 1000).body)
    assert refused["error"]["code"] == "rate_limited"
    assert _usage(client, key)["pending_upload_bytes"] == 72 * MIB + 8 * 1000
