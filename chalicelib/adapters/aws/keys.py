"""The DynamoDB key scheme (docs/architecture.md): one place builds every key."""
from __future__ import annotations

import hashlib


# An API key's write log is spread over this many items in the key's partition
# (KEY#<id> / W#<shard>), so concurrent writers through one key claim different
# items instead of racing for one (domain/ratelimit.claim_sharded keeps the limit exact).
WRITE_SHARDS = 8


def write_shard_key(key_id: str, shard: int) -> dict:
    return {"PK": f"KEY#{key_id}", "SK": f"W#{shard:02d}"}


def write_shard_keys(key_id: str) -> list[dict]:
    return [write_shard_key(key_id, shard) for shard in range(WRITE_SHARDS)]


def workspace_key(workspace_id: str) -> dict:
    return {"PK": f"WS#{workspace_id}", "SK": "WS"}


# A workspace's bundle files, each counted once in its storage: reference counts
# (`r_<sha256>`: live versions referring to the file) and sizes (`s_<sha256>`) spread
# over FILE_BUCKETS items by the hash's first byte, so a version of up to 200 files
# touches at most FILE_BUCKETS items in its transaction (the limit is 100 actions).
FILE_BUCKETS = 32


def file_bucket(sha256: str) -> int:
    return int(sha256[:2], 16) % FILE_BUCKETS


def workspace_files_key(workspace_id: str, bucket: int) -> dict:
    return {"PK": f"WS#{workspace_id}", "SK": f"FILES#{bucket:02d}"}


def api_key_key(key_id: str) -> dict:
    return {"PK": f"KEY#{key_id}", "SK": "KEY"}


def document_pk(document_id: str) -> str:
    return f"DOC#{document_id}"


def document_key(document_id: str) -> dict:
    return {"PK": document_pk(document_id), "SK": "META"}


def version_item_key(document_id: str, number: int) -> dict:
    return {"PK": document_pk(document_id), "SK": f"V#{number:08d}"}


def share_key(share_id: str) -> dict:
    return {"PK": f"SHARE#{share_id}", "SK": "SHARE"}


def idempotency_key(key_id: str, key_digest: str) -> dict:
    # Scoped to the API key: a retry comes from the client that sent the first try.
    return {"PK": f"IDEM#{key_id}#{key_digest}", "SK": "IDEM"}


def rate_key(scope: str) -> dict:
    return {"PK": f"RATE#{scope}", "SK": "RATE"}


def lease_key(scope: str) -> dict:
    return {"PK": f"LEASE#{scope}", "SK": "LEASE"}


def export_key(export_id: str) -> dict:
    return {"PK": f"EXPORT#{export_id}", "SK": "EXPORT"}


def running_export_key(workspace_id: str) -> dict:
    """The workspace's one place for a running export: which export holds it, until when."""
    return {"PK": f"EXPORTS#{workspace_id}", "SK": "RUNNING"}


def feedback_key(feedback_id: str) -> dict:
    return {"PK": f"FB#{feedback_id}", "SK": "FB"}


def feedback_workspace_pk(workspace_id: str) -> str:
    return f"WS#{workspace_id}#FB"


def feedback_document_pk(document_id: str) -> str:
    return f"DOC#{document_id}#FB"


def feedback_sort_key(created_ms: int, feedback_id: str) -> str:
    return f"{created_ms:015d}#{feedback_id}"


def documents_index_pk(workspace_id: str) -> str:
    return f"WS#{workspace_id}#DOCS"


def keys_index_pk(workspace_id: str) -> str:
    return f"WS#{workspace_id}#KEYS"


def documents_sort_key(updated_ms: int, document_id: str) -> str:
    return f"{updated_ms:015d}#{document_id}"


def sso_join_key(domain: str, workspace_id: str) -> dict:
    """A workspace's `sso_auto_join` as the sign-in looks it up: by email domain (contract 7f)."""
    return {"PK": f"SSOJOIN#{domain}", "SK": f"WS#{workspace_id}"}


def user_key(email_lower: str) -> dict:
    return {"PK": f"USER#{email_lower}", "SK": "USER"}


def session_key(session_hash: str) -> dict:
    return {"PK": f"SESSION#{session_hash}", "SK": "SESSION"}


def user_sessions_index_pk(email_lower: str) -> str:
    return f"USER#{email_lower}#SESSIONS"


# OAuth (adapters/aws/oauth.py)

def client_key(client_id: str) -> dict:
    if client_id.startswith("dpc_") and len(client_id) < 100:
        return {"PK": f"OAUTHCLIENT#{client_id}", "SK": "CLIENT"}
    return {"PK": "OAUTHCLIENT#url:" + hashlib.sha256(client_id.encode()).hexdigest(), "SK": "CLIENT"}


def code_key(code_hash: str) -> dict:
    return {"PK": f"OAUTHCODE#{code_hash}", "SK": "CODE"}


def grant_key(grant_id: str) -> dict:
    return {"PK": f"GRANT#{grant_id}", "SK": "GRANT"}


def grants_index_pk(workspace_id: str) -> str:
    return f"WS#{workspace_id}#GRANTS"


def access_key(token_hash: str) -> dict:
    return {"PK": f"ATOKEN#{token_hash}", "SK": "TOKEN"}


def refresh_key(token_hash: str) -> dict:
    return {"PK": f"RTOKEN#{token_hash}", "SK": "TOKEN"}


# View counters (adapters/aws/views.py)

def views_pk(document_id: str) -> str:
    return f"VIEWS#{document_id}"


def day_sk(day: str, shard: int) -> str:
    return f"D#{day}#{shard:02d}"


def version_views_sk(version_id: str, shard: int) -> str:
    return f"P#{version_id}#{shard:02d}"


def total_sk(shard: int) -> str:
    return f"T#{shard:02d}"


# Pending CDN invalidations (adapters/aws/cdn.py)

PENDING_INDEX_PK = "CDN#PENDING"


def pending_key(path: str) -> dict:
    return {"PK": f"CDN#{path}", "SK": "CDN"}


# The review loop (adapters/aws/feedback.py, adapters/aws/webhooks.py)

def reply_key(feedback_id: str, created_ms: int, reply_id: str) -> dict:
    # In the thread's own partition: the feedback and all its replies are one Query.
    return {"PK": f"FB#{feedback_id}", "SK": f"R#{created_ms:015d}#{reply_id}"}


def reviews_pk(document_id: str) -> str:
    return f"REV#{document_id}"


def review_key(document_id: str, created_ms: int, review_id: str) -> dict:
    """A document's reviews, in their own partition (a document's reads never page through them)."""
    return {"PK": reviews_pk(document_id), "SK": f"{created_ms:015d}#{review_id}"}


def events_pk(workspace_id: str) -> str:
    return f"EV#{workspace_id}"


def event_key(workspace_id: str, created_ms: int, event_id: str) -> dict:
    return {"PK": events_pk(workspace_id), "SK": f"{created_ms:015d}#{event_id}"}


OUTBOX_INDEX_PK = "OUTBOX#PENDING"  # GSI1 of events not yet turned into webhook deliveries


def webhook_key(webhook_id: str) -> dict:
    return {"PK": f"WH#{webhook_id}", "SK": "WH"}


def webhooks_index_pk(workspace_id: str) -> str:
    return f"WS#{workspace_id}#WH"


def delivery_key(delivery_id: str) -> dict:
    return {"PK": f"WHD#{delivery_id}", "SK": "WHD"}


def deliveries_index_pk(webhook_id: str) -> str:
    return f"WH#{webhook_id}#D"


DUE_INDEX_PK = "WHD#DUE"  # GSI2 of deliveries still to try


# People (adapters/aws/people.py): members live in their workspace's partition.

def member_key(workspace_id: str, email: str) -> dict:
    return {"PK": f"WS#{workspace_id}", "SK": f"MEMBER#{email}"}


def removal_key(workspace_id: str, email: str) -> dict:
    """A removal mark (a person removed from the workspace; single sign-on adds them not back)."""
    return {"PK": f"REMOVED#{workspace_id}", "SK": f"MEMBER#{email}"}


def memberships_index_pk(email: str) -> str:
    return f"USER#{email}#WORKSPACES"


def account_token_key(token_hash: str) -> dict:
    return {"PK": f"ACCT#{token_hash}", "SK": "TOKEN"}


def invites_index_pk(workspace_id: str) -> str:
    return f"WS#{workspace_id}#INVITES"


def invitee_index_pk(email: str) -> str:
    """GSI2 of the invitations to one person (the dashboard's welcome page)."""
    return f"INVITEE#{email}"


def activity_pk(workspace_id: str) -> str:
    return f"ACT#{workspace_id}"


# Recipients (adapters/aws/recipients.py): a document's recipients and codes in one partition;
# the audience by entry in the entry's partition ("Shared with me": one Query per entry).

def recipients_pk(document_id: str) -> str:
    return f"RCPT#{document_id}"


def recipient_key(document_id: str, email: str) -> dict:
    return {"PK": recipients_pk(document_id), "SK": f"R#{email}"}


def recipient_code_key(document_id: str, email: str) -> dict:
    return {"PK": recipients_pk(document_id), "SK": f"C#{email}"}


def audience_key(entry: str, document_id: str) -> dict:
    return {"PK": f"AUD#{entry}", "SK": document_id}
