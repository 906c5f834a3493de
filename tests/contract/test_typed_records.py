"""The ports speak typed records: both adapters hand back exactly the record types
of chalicelib/ports/records.py (not dicts, not subclasses), equal field by field to
what was stored, whatever their own rows and items hold besides."""
from __future__ import annotations

import dataclasses

import pytest

from chalicelib.ports.records import Event, Feedback, Reply, Webhook, WebhookDelivery, WebhookSecret
from chalicelib.ports.records import ApiKey, KeyWriteLog, Workspace
from chalicelib.ports.errors import KeyCapReached
from tests.contract.test_repository_contract import WS, create, make_workspace, repos  # noqa: F401

ANCHOR = {"quote": "the results", "prefix": "see ", "suffix": " below"}


def exactly(cls, value):
    assert type(value) is cls, f"{type(value).__name__} is not {cls.__name__}"
    return value


def test_feedback_replies_and_events_come_back_as_records(repos):
    make_workspace(repos)
    doc = create(repos, 1)
    feedback = Feedback(feedback_id="fb_typed0001", document_id=doc.document_id, workspace_id=WS,
                        version_id="v_1_1", version_number=1, message="Typed", name="Ann", quote="the results",
                        anchor=ANCHOR, status="open", created_ms=100)
    event = Event(event_id="ev_typed0001", workspace_id=WS, type="feedback.created", created_ms=100,
                  document_id=doc.document_id, feedback_id=feedback.feedback_id, wakes=True,
                  payload={"feedback_id": feedback.feedback_id, "nested": {"n": 1}})
    position = repos.feedback.activity_head(WS, 50)
    repos.feedback.create(feedback, None, event)

    stored = exactly(Feedback, repos.feedback.get(feedback.feedback_id))
    assert stored == feedback
    assert [exactly(Feedback, f) for f in repos.feedback.get_many([feedback.feedback_id, "fb_missing00"])] \
        == [feedback]
    page, _ = repos.feedback.page(WS, doc.document_id, None, 10, None)
    assert [exactly(Feedback, f) for f in page] == [feedback]

    events, _ = repos.feedback.activity_since(WS, None, position, 101, 10)
    assert [exactly(Event, e) for e in events] == [event]

    reply = Reply(reply_id="rp_typed0001", feedback_id=feedback.feedback_id, document_id=doc.document_id,
                  workspace_id=WS, message="Thanks", author="owner", created_ms=200)
    assert repos.feedback.add_reply(stored, reply, 200, False, None) is False
    replies = repos.feedback.replies([feedback.feedback_id, "fb_none00000"])
    assert [exactly(Reply, r) for r in replies[feedback.feedback_id]] == [reply]
    assert replies["fb_none00000"] == []
    assert repos.feedback.get(feedback.feedback_id) == dataclasses.replace(feedback, reply_count=1)

    repos.feedback.set_status(repos.feedback.get(feedback.feedback_id), True, 300)
    assert repos.feedback.get(feedback.feedback_id) == dataclasses.replace(
        feedback, reply_count=1, status="resolved", resolved_ms=300)


def test_the_outbox_hands_back_events(repos):
    if repos.webhooks is None:
        pytest.skip("no webhook repository")
    make_workspace(repos)
    doc = create(repos, 1)
    event = Event(event_id="ev_outbox0001", workspace_id=WS, type="document.published", created_ms=500,
                  document_id=doc.document_id, payload={"title": "Doc 1"})
    feedback = Feedback(feedback_id="fb_outbox001", document_id=doc.document_id, workspace_id=WS,
                        version_id="v_1_1", message="m", created_ms=500)
    repos.feedback.create(feedback, None, event)
    pending = repos.webhooks.pending_events(10)
    assert [exactly(Event, e) for e in pending if e.event_id == event.event_id] == [event]
    assert exactly(Event, repos.webhooks.get_event(WS, 500, event.event_id)) == event
    repos.webhooks.dispatch(event, [])
    assert event.event_id not in [e.event_id for e in repos.webhooks.pending_events(10)]


def test_webhooks_and_deliveries_come_back_as_records(repos):
    make_workspace(repos)
    doc = create(repos, 1)
    hook = Webhook(webhook_id="wh_typed0001", workspace_id=WS, url="https://example.com/hook",
                   events=("feedback.created", "document.published"), secrets=(WebhookSecret("whsec_one"),),
                   created_ms=10)
    repos.webhooks.create(hook, 5)
    assert exactly(Webhook, repos.webhooks.get(hook.webhook_id)) == hook
    assert [exactly(Webhook, w) for w in repos.webhooks.list_for_workspace(WS)] == [hook]
    assert all(type(s) is WebhookSecret for s in repos.webhooks.get(hook.webhook_id).secrets)

    rotated = (WebhookSecret("whsec_two"), WebhookSecret("whsec_one", expires_ms=99))
    assert repos.webhooks.set_secrets(hook, rotated) is True
    assert repos.webhooks.set_secrets(hook, rotated) is False  # no longer the secrets read
    assert repos.webhooks.get(hook.webhook_id) == dataclasses.replace(hook, secrets=rotated)

    event = Event(event_id="ev_hook00001", workspace_id=WS, type="document.published", created_ms=500,
                  document_id=doc.document_id, payload={"title": "Doc 1"})
    repos.feedback.create(Feedback(feedback_id="fb_hook00001", document_id=doc.document_id, workspace_id=WS,
                                   version_id="v_1_1", message="m", created_ms=500), None, event)
    delivery = WebhookDelivery(delivery_id="msg_typed0001", webhook_id=hook.webhook_id, workspace_id=WS,
                               event_id=event.event_id, event_created_ms=event.created_ms, event=event.type,
                               status="pending", attempts=0, created_ms=600, next_attempt_ms=600, updated_ms=600)
    repos.webhooks.dispatch(event, [delivery])
    assert exactly(WebhookDelivery, repos.webhooks.get_delivery(delivery.delivery_id)) == delivery
    assert [exactly(WebhookDelivery, d) for d in repos.webhooks.due(600, 10)] == [delivery]
    assert repos.webhooks.due(599, 10) == []

    assert repos.webhooks.claim(delivery, 700) is True
    leased = dataclasses.replace(delivery, next_attempt_ms=700)
    assert repos.webhooks.claim(delivery, 800) is False  # moved since it was read
    assert repos.webhooks.get_delivery(delivery.delivery_id) == leased
    outcome = dataclasses.replace(leased, status="pending", attempts=1, response_status=500,
                                  last_error="HTTP 500", next_attempt_ms=900, updated_ms=650)
    assert repos.webhooks.record(leased, outcome) is True
    assert repos.webhooks.record(leased, outcome) is False  # attempts moved
    assert repos.webhooks.get_delivery(delivery.delivery_id) == outcome
    done = dataclasses.replace(outcome, status="delivered", attempts=2, response_status=204, last_error=None,
                               next_attempt_ms=None, updated_ms=950)
    assert repos.webhooks.record(outcome, done) is True
    assert [exactly(WebhookDelivery, d) for d in repos.webhooks.deliveries(hook.webhook_id, 10)] == [done]
    assert repos.webhooks.due(10**15, 10) == []


# ------------------------------------------------------------------ workspaces and API keys

def test_workspaces_come_back_as_records(repos):
    workspace = Workspace(workspace_id=WS, name="Typed", plan="pro", created_ms=7, brand_name="Acme <Labs>",
                          brand_tagline="Reports")
    repos.workspaces.create(dataclasses.replace(workspace, document_count=9, key_count=9))  # counts start at 0
    assert exactly(Workspace, repos.workspaces.get(WS)) == workspace
    assert repos.workspaces.get("ws_missing") is None

    assert exactly(Workspace, repos.workspaces.set_plan(WS, "free")) == dataclasses.replace(workspace, plan="free")
    cleared = repos.workspaces.set_fields(WS, {"brand_name": None, "brand_tagline": None, "name": "Renamed"})
    assert exactly(Workspace, cleared) == dataclasses.replace(workspace, plan="free", name="Renamed",
                                                              brand_name=None, brand_tagline=None)
    assert repos.workspaces.get(WS) == cleared

    create(repos, 1)  # counted with the document, in its own atomic step
    counted = exactly(Workspace, repos.workspaces.get(WS))
    assert (counted.document_count, counted.key_count) == (1, 0)
    assert type(counted.version_total) is int and type(counted.storage_bytes) is int


def test_api_keys_come_back_as_records(repos):
    make_workspace(repos)
    key = ApiKey(key_id="key_typed0001", workspace_id=WS, key_hash="a" * 64, name="CI", prefix="dpk_AbCdEf…",
                 created_ms=10, created_by="ed@x.io")
    repos.keys.create(key, 3)
    workspace_key = ApiKey(key_id="key_typed0002", workspace_id=WS, key_hash="c" * 64, name="ops", created_ms=5)
    repos.keys.create(workspace_key, 3)
    assert exactly(ApiKey, repos.keys.get(workspace_key.key_id)).created_by is None
    repos.keys.revoke(workspace_key.key_id, 6)

    stored = exactly(ApiKey, repos.keys.get(key.key_id))
    assert dataclasses.replace(stored, write_logs=()) == key
    # The write log as the store keeps it: one log, or every shard; never used yet.
    assert stored.write_logs and all(type(log) is KeyWriteLog for log in stored.write_logs)
    assert [log.shard for log in stored.write_logs] == list(range(len(stored.write_logs)))
    assert all(log.seq == 0 and log.times == () for log in stored.write_logs) and stored.writes == []
    assert repos.keys.get("key_missing00") is None

    with_key, _, _ = repos.documents.get_with_key(key.key_id)
    assert exactly(ApiKey, with_key) == stored
    assert [exactly(ApiKey, k) for k in repos.keys.list_for_workspace(WS)][0] == stored
    assert repos.workspaces.get(WS).key_count == 1

    revoked = exactly(ApiKey, repos.keys.revoke(key.key_id, 99))
    assert revoked == dataclasses.replace(stored, revoked_at=99)
    assert repos.keys.get(key.key_id) == revoked
    assert repos.keys.revoke(key.key_id, 150) == revoked  # once
    assert repos.keys.revoke("key_missing00", 150) is None
    assert repos.workspaces.get(WS).key_count == 0


def test_the_key_cap_reports_the_workspace_as_a_record(repos):
    make_workspace(repos)
    first = ApiKey(key_id="key_cap000001", workspace_id=WS, key_hash="b" * 64, name="one", created_ms=1)
    repos.keys.create(first, 1)
    with pytest.raises(KeyCapReached) as refused:
        repos.keys.create(dataclasses.replace(first, key_id="key_cap000002"), 1)
    assert exactly(Workspace, refused.value.workspace).key_count == 1
    with pytest.raises(KeyCapReached) as missing:
        repos.keys.create(dataclasses.replace(first, key_id="key_cap000003", workspace_id="ws_missing"), None)
    assert missing.value.workspace is None


# ------------------------------------------------------------------ documents, versions, share links (DocumentRepository)

def test_documents_versions_share_links_and_idempotency_come_back_as_records(repos):
    from chalicelib.ports import IdempotencyRecord
    from chalicelib.ports.records import Document, DocumentListing, ShareLink, StoredIdempotency, Version
    from chalicelib.ports.repositories import LISTING
    from tests.contract.test_repository_contract import add_key, new_doc

    make_workspace(repos, plan="pro")
    add_key(repos)
    doc, first = new_doc(1)
    doc = dataclasses.replace(doc, description="typed", share_enabled=False, share_expires_ms=1_900_000_000_000,
                              share_access="workspace")
    idem = IdempotencyRecord("k1", "d" * 64, "hash-a", '{"document_id": "x"}', expires_at=1000, now=10)
    repos.documents.create(doc, first, 5, ("pro",), None, idem)
    assert exactly(Document, repos.documents.get(doc.document_id)) == doc
    assert {k: exactly(Document, v) for k, v in repos.documents.get_many([doc.document_id]).items()} \
        == {doc.document_id: doc}

    files = ({"path": "style.css", "size_bytes": 12, "sha256": "ab" * 32},)
    second = Version(version_id="v_typed_2", number=2, created_ms=5000, size_bytes=40,
                     blob_key="documents/ws/d/v_typed_2.html", note="two", format="markdown", files=files,
                     provenance='{"statement":{"version_number":2},"signature":{"alg":"ES256"}}')
    repos.documents.append_version(doc, second, {"title": "Two", "latest_content": "markdown files"}, None, None)
    after = dataclasses.replace(doc, title="Two", latest_content="markdown files", version_count=2,
                                latest_version_id=second.version_id, latest_size=second.size_bytes,
                                updated_ms=second.created_ms)
    stored, versions = repos.documents.get_with_versions(doc.document_id)
    assert exactly(Document, stored) == after
    assert [exactly(Version, v) for v in versions] == [first, second]
    assert exactly(Version, repos.documents.get_version(doc.document_id, 2)) == second
    assert all(type(f["size_bytes"]) is int for f in second.files)

    share, found, workspace, shown = repos.documents.get_for_share(doc.share_id, 2)
    assert exactly(ShareLink, share) == ShareLink(doc.share_id, doc.document_id, WS)
    assert exactly(Workspace, workspace) == repos.workspaces.get(WS)
    assert exactly(ShareLink, repos.documents.get_share(doc.share_id)) == share
    assert exactly(Document, found) == after and exactly(Version, shown) == second

    listing = DocumentListing(**{name: getattr(after, name) for name in LISTING})
    page, cursor = repos.documents.list_page(WS, 10, None)
    assert [exactly(DocumentListing, d) for d in page] == [listing] and cursor is None
    assert [exactly(DocumentListing, d) for d in repos.documents.list_all(WS)] == [listing]

    answer = StoredIdempotency(key_id="k1", key_digest="d" * 64, request_hash="hash-a",
                               response_json='{"document_id": "x"}', expires_at=1000)
    assert exactly(StoredIdempotency, repos.documents.get_idempotency("k1", "d" * 64)) == answer
    _key, with_key, replay = repos.documents.get_with_key("k1", doc.document_id, "d" * 64)
    assert exactly(Document, with_key) == after and exactly(StoredIdempotency, replay) == answer

    changed = repos.documents.update_fields(after, {"description": "changed", "share_expires_ms": None})
    assert exactly(Document, changed) == dataclasses.replace(after, description="changed", share_expires_ms=None)
    locked = repos.documents.set_passphrase(changed, "hash1")
    assert exactly(Document, locked) == dataclasses.replace(changed, passphrase_hash="hash1", passphrase_epoch=1)
    assert repos.documents.get(doc.document_id) == locked


# ------------------------------------------------------------------ OAuth (ports/oauth.py; helper s3-oauth)

def test_oauth_clients_codes_grants_and_tokens_come_back_as_records(repos):
    """Issue 25 item 2: the OAuth port took and returned dicts (the SQLite adapter's rows,
    the DynamoDB adapter's items less their keys); both now hand back the records."""
    from chalicelib.ports.records import AccessToken, AuthorizationCode, OAuthClient, OAuthGrant, RefreshToken

    oauth = repos.oauth
    now = 1_795_000_000_000
    registered = OAuthClient(client_id="dpc_typed", kind="registered", redirect_uris=("https://app.example/cb",),
                             client_name="Typed", scopes=("docs:read", "feedback"), client_uri="https://app.example",
                             logo_uri="https://app.example/logo.png", created_ms=now, expires_ms=now + 86_400_000)
    oauth.put_client(registered)
    assert exactly(OAuthClient, oauth.get_client("dpc_typed")) == registered
    oauth.keep_client("dpc_typed")
    assert oauth.get_client("dpc_typed") == dataclasses.replace(registered, expires_ms=None)
    url = "https://app.example/" + "m" * 1900 + ".json"
    described = OAuthClient(client_id=url, kind="metadata", redirect_uris=("https://app.example/cb",
                                                                            "http://127.0.0.1:8765/cb"),
                            client_name="app.example", created_ms=now, expires_ms=now + 3_600_000)
    oauth.put_client(described)
    assert exactly(OAuthClient, oauth.get_client(url)) == described
    assert described.scopes is None and oauth.get_client("dpc_none") is None

    code = AuthorizationCode(code_hash="c" * 64, client_id="dpc_typed", redirect_uri="https://app.example/cb",
                             code_challenge="p" * 43, resource="http://h/mcp", scopes=("docs:read",),
                             workspace_id=WS, expires_ms=now + 120_000, user="ann@example.com", client_name="Typed")
    oauth.put_code(code)
    consumed, won = oauth.consume_code(code.code_hash, now)
    assert won is True and exactly(AuthorizationCode, consumed) == dataclasses.replace(code, used_ms=now)
    assert oauth.consume_code(code.code_hash, now + 1) == (dataclasses.replace(code, used_ms=now), False)
    assert oauth.consume_code("0" * 64, now) == (None, False)

    grant = OAuthGrant(grant_id="gr_typed", workspace_id=WS, client_id="dpc_typed", scopes=("docs:read",),
                       resource="http://h/mcp", created_ms=now, user="ann@example.com", client_name="Typed")
    access = AccessToken(token_hash="a" * 64, grant_id="gr_typed", workspace_id=WS, client_id="dpc_typed",
                         scopes=("docs:read",), audience="http://h/mcp", expires_ms=now + 3_600_000)
    refresh = RefreshToken(token_hash="r" * 64, grant_id="gr_typed", client_id="dpc_typed", created_ms=now,
                           expires_ms=now + 86_400_000)
    oauth.create_grant(grant, access, refresh, code.code_hash)
    assert oauth.consume_code(code.code_hash, now + 2)[0] == dataclasses.replace(code, used_ms=now,
                                                                                  grant_id="gr_typed")
    assert exactly(OAuthGrant, oauth.get_grant("gr_typed")) == grant
    assert [exactly(OAuthGrant, g) for g in oauth.list_grants(WS)] == [grant]
    got_access, got_grant = oauth.get_access(access.token_hash)
    assert (exactly(AccessToken, got_access), exactly(OAuthGrant, got_grant)) == (access, grant)
    assert exactly(RefreshToken, oauth.get_refresh(refresh.token_hash)) == refresh
    oauth.touch_grant("gr_typed", now + 60_000)
    assert oauth.get_grant("gr_typed") == dataclasses.replace(grant, last_used_ms=now + 60_000)

    access2 = dataclasses.replace(access, token_hash="b" * 64, expires_ms=now + 7_200_000)
    refresh2 = RefreshToken(token_hash="s" * 64, grant_id="gr_typed", client_id="dpc_typed", created_ms=now + 5,
                            expires_ms=now + 90_000_000)
    assert oauth.rotate_refresh(refresh.token_hash, now + 5, access2, refresh2) is True
    assert oauth.get_refresh(refresh.token_hash) == dataclasses.replace(refresh, used_ms=now + 5)
    assert oauth.get_refresh(refresh2.token_hash) == refresh2
    assert oauth.get_access(access2.token_hash)[0] == access2

    revoked = dataclasses.replace(grant, last_used_ms=now + 60_000, revoked_ms=now + 9)
    assert exactly(OAuthGrant, oauth.revoke_grant("gr_typed", now + 9)) == revoked
    assert oauth.revoke_grant("gr_typed", now + 10) == revoked  # idempotent: the first revocation stays
    assert oauth.revoke_grant("gr_none", now) is None
