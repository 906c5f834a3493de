"""The embedded database: SQLite through the standard library.

- WAL (readers never block the one writer), `synchronous=FULL` (an acknowledged
  commit survives power loss), a busy timeout, foreign keys on.
- One connection per thread (`threading.local`), autocommit mode
  (`isolation_level=None`) with explicit transactions: every write is
  `BEGIN IMMEDIATE` ... `COMMIT`, so it holds the write lock from its first read
  and read-then-write races cannot happen; reads that must agree use a deferred
  `BEGIN` (one snapshot).
- The schema is versioned: MIGRATIONS[i] takes `PRAGMA user_version` from i to
  i + 1; they run on open, inside one write transaction.

Driver errors never leave this module as sqlite3 errors: a write that failed
before COMMIT is WriteRefused (rolled back), one whose COMMIT failed is
OutcomeUnknown, a read that failed is StorageUnavailable. A full disk
(SQLITE_FULL) is StorageFull: rolled back, nothing applied; deletes may spend
the disk reserve (space.py) to get through.
"""
from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Optional

from chalicelib.adapters.sqlite.space import Reserve
from chalicelib.ports.errors import OutcomeUnknown, StorageFull, StorageUnavailable, WriteRefused

BUSY_TIMEOUT_MS = 10_000
# Expired rows (idempotency records, rate logs, sessions, OAuth codes and tokens,
# unused client registrations) are purged by a sweep at most this often, run by
# whichever write comes next (DynamoDB deletes them by TTL on `expires_at`).
SWEEP_INTERVAL_SECONDS = 600
# Only rows expired at least this long ago go (reads check expiry themselves anyway).
SWEEP_GRACE_SECONDS = 3600
# (table, condition on "now" in seconds (:s) and milliseconds (:ms)) of what has expired.
EXPIRED = (
    ("idempotency", "expires_at < :s"),
    ("rate_logs", "expires_at < :s"),
    ("view_limits", "expires_at < :s"),
    ("sessions", "expires_ms < :ms"),
    ("oauth_codes", "expires_ms < :ms"),
    ("oauth_access_tokens", "expires_ms < :ms"),
    ("oauth_refresh_tokens", "expires_ms < :ms"),
    ("oauth_clients", "expires_ms IS NOT NULL AND expires_ms < :ms "
                      "AND client_id NOT IN (SELECT client_id FROM oauth_grants)"),
    ("leases", "expires_ms < :ms"),
    ("exports", "expires_at < :s"),
)

MIGRATIONS: list[str] = [
    # 0 -> 1: the first schema.
    """
    CREATE TABLE workspaces (
        id              TEXT PRIMARY KEY,
        name            TEXT NOT NULL,
        plan            TEXT NOT NULL,
        created_ms      INTEGER NOT NULL,
        document_count  INTEGER NOT NULL DEFAULT 0 CHECK (document_count >= 0),
        key_count       INTEGER NOT NULL DEFAULT 0 CHECK (key_count >= 0),
        brand_name      TEXT,
        brand_tagline   TEXT
    );
    CREATE TABLE api_keys (
        key_id          TEXT PRIMARY KEY,
        workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
        key_hash        TEXT NOT NULL,
        name            TEXT NOT NULL,
        prefix          TEXT,
        created_ms      INTEGER NOT NULL,
        revoked_at      INTEGER,
        last_used_at    INTEGER,
        writes          TEXT NOT NULL DEFAULT '[]',  -- the write limit's sliding log: JSON array of epoch ms
        writes_seq      INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX api_keys_by_workspace ON api_keys (workspace_id, created_ms, key_id);
    CREATE TABLE documents (
        document_id         TEXT PRIMARY KEY,
        workspace_id        TEXT NOT NULL REFERENCES workspaces (id),
        title               TEXT NOT NULL,
        description         TEXT NOT NULL DEFAULT '',
        share_id            TEXT NOT NULL,
        created_ms          INTEGER NOT NULL,
        updated_ms          INTEGER NOT NULL,
        version_count       INTEGER NOT NULL CHECK (version_count >= 1),
        latest_version_id   TEXT NOT NULL,
        latest_size         INTEGER NOT NULL,
        open_feedback_count INTEGER NOT NULL DEFAULT 0 CHECK (open_feedback_count >= 0),
        passphrase_hash     TEXT,
        passphrase_epoch    INTEGER NOT NULL DEFAULT 0,
        deleting            INTEGER NOT NULL DEFAULT 0  -- 1: delete begun (hidden, not counted)
    );
    CREATE INDEX documents_by_workspace ON documents (workspace_id, updated_ms, document_id) WHERE deleting = 0;
    CREATE TABLE versions (
        document_id     TEXT NOT NULL REFERENCES documents (document_id) ON DELETE CASCADE,
        number          INTEGER NOT NULL CHECK (number >= 1),
        version_id      TEXT NOT NULL,
        note            TEXT,
        created_ms      INTEGER NOT NULL,
        size_bytes      INTEGER NOT NULL,
        blob_key        TEXT NOT NULL,
        PRIMARY KEY (document_id, number)
    ) WITHOUT ROWID;
    CREATE TABLE share_links (
        share_id        TEXT PRIMARY KEY,
        document_id     TEXT NOT NULL UNIQUE REFERENCES documents (document_id) ON DELETE CASCADE,
        workspace_id    TEXT NOT NULL
    );
    CREATE TABLE idempotency (
        key_id          TEXT NOT NULL,
        key_digest      TEXT NOT NULL,
        request_hash    TEXT NOT NULL,
        response        TEXT NOT NULL,
        expires_at      INTEGER NOT NULL,
        PRIMARY KEY (key_id, key_digest)
    ) WITHOUT ROWID;
    CREATE TABLE rate_logs (
        scope           TEXT PRIMARY KEY,
        hits            TEXT NOT NULL,  -- JSON array of epoch ms
        seq             INTEGER NOT NULL,
        expires_at      INTEGER NOT NULL
    );
    CREATE TABLE feedback (
        feedback_id     TEXT PRIMARY KEY,
        document_id     TEXT NOT NULL REFERENCES documents (document_id) ON DELETE CASCADE,
        workspace_id    TEXT NOT NULL,
        version_id      TEXT NOT NULL,
        version_number  INTEGER,
        message         TEXT NOT NULL,
        name            TEXT,
        quote           TEXT,
        status          TEXT NOT NULL CHECK (status IN ('open', 'resolved')),
        created_ms      INTEGER NOT NULL,
        resolved_ms     INTEGER
    );
    CREATE INDEX feedback_by_workspace ON feedback (workspace_id, created_ms, feedback_id);
    CREATE INDEX feedback_by_document ON feedback (document_id, created_ms, feedback_id);
    CREATE TABLE users (
        email               TEXT PRIMARY KEY,  -- lowercased
        password_hash       TEXT NOT NULL,
        workspace_id        TEXT NOT NULL,
        role                TEXT NOT NULL,
        created_ms          INTEGER NOT NULL,
        password_changed_ms INTEGER
    );
    CREATE TABLE sessions (
        session_hash    TEXT PRIMARY KEY,  -- SHA-256 of the session id; the id is never stored
        email           TEXT NOT NULL REFERENCES users (email) ON DELETE CASCADE,
        workspace_id    TEXT NOT NULL,
        created_ms      INTEGER NOT NULL,
        expires_ms      INTEGER NOT NULL,
        expires_at      INTEGER
    );
    CREATE INDEX sessions_by_email ON sessions (email);
    """,
    # 1 -> 2: OAuth 2.1 for MCP (adapters/sqlite/oauth.py): clients, grants, codes, tokens.
    """
    CREATE TABLE oauth_clients (
        client_id       TEXT PRIMARY KEY,  -- dpc_… (registered) or an https URL (metadata document)
        kind            TEXT NOT NULL CHECK (kind IN ('registered', 'metadata')),
        client_name     TEXT,
        redirect_uris   TEXT NOT NULL,     -- JSON array
        scopes          TEXT,              -- JSON array; NULL: every scope
        grant_types     TEXT,              -- JSON array
        client_uri      TEXT,
        logo_uri        TEXT,
        created_ms      INTEGER,
        expires_ms      INTEGER            -- registered and never used / metadata cache; NULL: kept
    );
    CREATE TABLE oauth_grants (
        grant_id        TEXT PRIMARY KEY,
        workspace_id    TEXT NOT NULL,
        "user"          TEXT,
        client_id       TEXT NOT NULL,
        client_name     TEXT,
        scopes          TEXT NOT NULL,     -- JSON array
        resource        TEXT NOT NULL,
        created_ms      INTEGER NOT NULL,
        last_used_ms    INTEGER,
        revoked_ms      INTEGER
    );
    CREATE INDEX oauth_grants_by_workspace ON oauth_grants (workspace_id, created_ms, grant_id);
    CREATE TABLE oauth_codes (
        code_hash       TEXT PRIMARY KEY,  -- SHA-256 of the code; the code is never stored
        client_id       TEXT NOT NULL,
        client_name     TEXT,
        redirect_uri    TEXT NOT NULL,
        code_challenge  TEXT NOT NULL,
        resource        TEXT NOT NULL,
        scopes          TEXT NOT NULL,
        workspace_id    TEXT NOT NULL,
        "user"          TEXT,
        expires_ms      INTEGER NOT NULL,
        used_ms         INTEGER,
        grant_id        TEXT
    );
    CREATE TABLE oauth_access_tokens (
        token_hash      TEXT PRIMARY KEY,  -- SHA-256 of the token
        grant_id        TEXT NOT NULL REFERENCES oauth_grants (grant_id),
        workspace_id    TEXT NOT NULL,
        client_id       TEXT NOT NULL,
        scopes          TEXT NOT NULL,
        audience        TEXT NOT NULL,
        expires_ms      INTEGER NOT NULL
    );
    CREATE INDEX oauth_access_by_grant ON oauth_access_tokens (grant_id);
    CREATE TABLE oauth_refresh_tokens (
        token_hash      TEXT PRIMARY KEY,  -- SHA-256 of the token
        grant_id        TEXT NOT NULL REFERENCES oauth_grants (grant_id),
        client_id       TEXT NOT NULL,
        created_ms      INTEGER,
        expires_ms      INTEGER NOT NULL,
        used_ms         INTEGER
    );
    CREATE INDEX oauth_refresh_by_grant ON oauth_refresh_tokens (grant_id);
    """,
    # 2 -> 3: view counters (chalicelib/adapters/sqlite/views.py).
    """
    CREATE TABLE view_days (
        document_id     TEXT NOT NULL,
        day             TEXT NOT NULL,  -- UTC, YYYY-MM-DD
        views           INTEGER NOT NULL CHECK (views >= 0),
        PRIMARY KEY (document_id, day)
    ) WITHOUT ROWID;
    CREATE TABLE view_versions (
        document_id     TEXT NOT NULL,
        version_id      TEXT NOT NULL,
        views           INTEGER NOT NULL CHECK (views >= 0),
        last_ms         INTEGER NOT NULL,
        PRIMARY KEY (document_id, version_id)
    ) WITHOUT ROWID;
    CREATE TABLE view_limits (
        scope           TEXT NOT NULL,  -- document id + keyed hash of the address (never the address)
        window_no       INTEGER NOT NULL,
        admitted        INTEGER NOT NULL,
        expires_at      INTEGER NOT NULL,
        PRIMARY KEY (scope, window_no)
    ) WITHOUT ROWID;
    """,
    # 3 -> 4: share link lifecycle (disable, expiry) and CDN invalidations not yet accepted.
    """
    ALTER TABLE documents ADD COLUMN share_enabled INTEGER NOT NULL DEFAULT 1 CHECK (share_enabled IN (0, 1));
    ALTER TABLE documents ADD COLUMN share_expires_ms INTEGER;  -- NULL: the link never expires
    CREATE TABLE cdn_pending (
        path            TEXT PRIMARY KEY,  -- e.g. /d/<share_id>*
        reason          TEXT NOT NULL,
        created_ms      INTEGER NOT NULL,
        attempts        INTEGER NOT NULL,
        last_attempt_ms INTEGER NOT NULL,
        last_error      TEXT NOT NULL
    );
    CREATE INDEX cdn_pending_by_age ON cdn_pending (created_ms, path);
    """,
    # 4 -> 5: content (contract 7b): a version's format (NULL: html) and its files
    # (JSON [{path, size_bytes, sha256}]; the bytes live once per workspace under files/<ws>/<sha256>).
    """
    ALTER TABLE versions ADD COLUMN format TEXT CHECK (format IS NULL OR format IN ('html', 'markdown'));
    ALTER TABLE versions ADD COLUMN files TEXT;
    -- What the latest version holds besides plain HTML ("markdown", "files", "markdown files";
    -- NULL: plain HTML), so an edit of a plain page needs no extra read.
    ALTER TABLE documents ADD COLUMN latest_content TEXT;
    """,
    # 5 -> 6: resource bounds (issue 24): storage and version usage per workspace, deleted
    # versions per document, and the workspace's write counter (in view_limits, by window).
    """
    ALTER TABLE workspaces ADD COLUMN storage_bytes INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE workspaces ADD COLUMN version_total INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE documents ADD COLUMN versions_deleted INTEGER NOT NULL DEFAULT 0;
    UPDATE workspaces SET
        storage_bytes = (SELECT COALESCE(SUM(v.size_bytes), 0) FROM versions v JOIN documents d
                         ON d.document_id = v.document_id WHERE d.workspace_id = workspaces.id AND d.deleting = 0),
        version_total = (SELECT COUNT(*) FROM versions v JOIN documents d
                         ON d.document_id = v.document_id WHERE d.workspace_id = workspaces.id AND d.deleting = 0);
    """,
    # 6 -> 7: people (adapters/sqlite/people.py): members and roles, one-time tokens,
    # the activity log, verified emails, workspace-only links. Every existing
    # account becomes the owner of its workspace.
    """
    ALTER TABLE users ADD COLUMN email_verified_ms INTEGER;
    UPDATE users SET email_verified_ms = created_ms;  -- accounts from before verification existed
    ALTER TABLE documents ADD COLUMN share_access TEXT NOT NULL DEFAULT 'public'
        CHECK (share_access IN ('public', 'workspace'));
    CREATE TABLE members (
        workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
        email           TEXT NOT NULL REFERENCES users (email),
        role            TEXT NOT NULL CHECK (role IN ('owner', 'editor', 'viewer')),
        created_ms      INTEGER NOT NULL,
        added_by        TEXT,
        PRIMARY KEY (workspace_id, email)
    ) WITHOUT ROWID;
    CREATE INDEX members_by_email ON members (email, created_ms);
    INSERT INTO members (workspace_id, email, role, created_ms)
        SELECT u.workspace_id, u.email, 'owner', u.created_ms FROM users u
        WHERE EXISTS (SELECT 1 FROM workspaces w WHERE w.id = u.workspace_id);
    CREATE TABLE account_tokens (
        token_hash      TEXT PRIMARY KEY,  -- SHA-256 of the token; the token is never stored
        kind            TEXT NOT NULL CHECK (kind IN ('verify', 'reset', 'invite', 'login')),
        email           TEXT NOT NULL,
        workspace_id    TEXT,
        role            TEXT,
        created_ms      INTEGER NOT NULL,
        expires_ms      INTEGER NOT NULL,
        used_ms         INTEGER,
        password_changed_ms INTEGER,
        invited_by      TEXT,
        expires_at      INTEGER NOT NULL
    );
    CREATE INDEX account_tokens_invites ON account_tokens (workspace_id, kind, created_ms);
    CREATE TABLE activity (
        workspace_id    TEXT NOT NULL,
        created_ms      INTEGER NOT NULL,
        activity_id     TEXT NOT NULL,
        actor_kind      TEXT NOT NULL,
        actor           TEXT NOT NULL,
        surface         TEXT NOT NULL,
        action          TEXT NOT NULL,
        target          TEXT,
        detail          TEXT NOT NULL DEFAULT '{}',
        expires_at      INTEGER NOT NULL,
        PRIMARY KEY (workspace_id, created_ms, activity_id)
    ) WITHOUT ROWID;
    CREATE INDEX activity_by_expiry ON activity (expires_at);
    """,
    # 7 -> 8: the review loop (contract 7c): anchors, replies, the event log (waiting and the
    # webhook outbox, written in the transaction of the change it reports), webhooks, deliveries.
    """
    ALTER TABLE feedback ADD COLUMN anchor TEXT;  -- JSON {quote, prefix?, suffix?} or NULL
    ALTER TABLE feedback ADD COLUMN reply_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE documents ADD COLUMN feedback_activity_ms INTEGER;  -- last comment or reply (live pages)
    CREATE TABLE feedback_replies (
        reply_id        TEXT PRIMARY KEY,
        feedback_id     TEXT NOT NULL REFERENCES feedback (feedback_id) ON DELETE CASCADE,
        document_id     TEXT NOT NULL,
        workspace_id    TEXT NOT NULL,
        message         TEXT NOT NULL,
        name            TEXT,
        author          TEXT NOT NULL CHECK (author IN ('owner', 'viewer')),
        created_ms      INTEGER NOT NULL
    );
    CREATE INDEX replies_by_feedback ON feedback_replies (feedback_id, created_ms, reply_id);
    CREATE TABLE events (
        seq             INTEGER PRIMARY KEY AUTOINCREMENT,  -- commit order (writes are serialised)
        event_id        TEXT NOT NULL UNIQUE,
        workspace_id    TEXT NOT NULL,
        document_id     TEXT,
        type            TEXT NOT NULL,
        feedback_id     TEXT,
        reply_id        TEXT,
        wakes           INTEGER NOT NULL DEFAULT 0,  -- answers a waiting feedback list
        payload         TEXT NOT NULL,               -- JSON: the webhook `data`
        created_ms      INTEGER NOT NULL,
        pending         INTEGER NOT NULL DEFAULT 1   -- not yet turned into webhook deliveries
    );
    CREATE INDEX events_by_workspace ON events (workspace_id, seq);
    CREATE INDEX events_pending ON events (seq) WHERE pending = 1;
    CREATE TABLE webhooks (
        webhook_id      TEXT PRIMARY KEY,
        workspace_id    TEXT NOT NULL REFERENCES workspaces (id),
        url             TEXT NOT NULL,
        events          TEXT NOT NULL,               -- JSON list
        secrets         TEXT NOT NULL,               -- JSON list, newest first (rotation keeps the old one a while)
        created_ms      INTEGER NOT NULL
    );
    CREATE INDEX webhooks_by_workspace ON webhooks (workspace_id, created_ms);
    CREATE TABLE webhook_deliveries (
        delivery_id     TEXT PRIMARY KEY,
        webhook_id      TEXT NOT NULL REFERENCES webhooks (webhook_id) ON DELETE CASCADE,
        workspace_id    TEXT NOT NULL,
        event_id        TEXT NOT NULL,
        event           TEXT NOT NULL,
        status          TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts        INTEGER NOT NULL DEFAULT 0,
        response_status INTEGER,
        last_error      TEXT,
        created_ms      INTEGER NOT NULL,
        next_attempt_ms INTEGER,
        updated_ms      INTEGER NOT NULL
    );
    CREATE INDEX deliveries_by_webhook ON webhook_deliveries (webhook_id, created_ms);
    CREATE INDEX deliveries_due ON webhook_deliveries (next_attempt_ms) WHERE status = 'pending';
    """,
    # 8 -> 9: bundle files count in storage once per workspace (issue 24): how many live
    # versions of the workspace refer to each distinct file; the files already stored are
    # counted now.
    """
    CREATE TABLE workspace_files (
        workspace_id    TEXT NOT NULL,
        sha256          TEXT NOT NULL,
        size_bytes      INTEGER NOT NULL,
        refs            INTEGER NOT NULL CHECK (refs > 0),  -- live versions referring to it
        PRIMARY KEY (workspace_id, sha256)
    );
    INSERT INTO workspace_files (workspace_id, sha256, size_bytes, refs)
        SELECT d.workspace_id, json_extract(f.value, '$.sha256'), MAX(json_extract(f.value, '$.size_bytes')),
               COUNT(DISTINCT v.document_id || '#' || v.number)
        FROM versions v JOIN documents d ON d.document_id = v.document_id, json_each(v.files) f
        WHERE v.files IS NOT NULL AND d.deleting = 0
        GROUP BY d.workspace_id, json_extract(f.value, '$.sha256');
    UPDATE workspaces SET storage_bytes = storage_bytes +
        (SELECT COALESCE(SUM(size_bytes), 0) FROM workspace_files WHERE workspace_id = workspaces.id);
    """,
    # 9 -> 10: suggested edits (contract 7e): the replacement a comment proposes, and the
    # version that applied it once accepted.
    """
    ALTER TABLE feedback ADD COLUMN suggestion TEXT;  -- JSON {replacement} or NULL
    ALTER TABLE feedback ADD COLUMN resolved_in_version INTEGER;
    """,
    # 10 -> 11: reviews (contract 7e): decisions on versions, and the review state each document keeps
    # (changed in the transaction of each review and review request).
    """
    ALTER TABLE documents ADD COLUMN review_state TEXT NOT NULL DEFAULT 'none'
        CHECK (review_state IN ('none', 'pending', 'changes_requested', 'approved'));
    ALTER TABLE documents ADD COLUMN review_version INTEGER;
    ALTER TABLE documents ADD COLUMN review_decisions TEXT;  -- JSON {"<kind>:<id>": decision}
    ALTER TABLE documents ADD COLUMN review_requested TEXT;  -- JSON [email, ...]
    ALTER TABLE documents ADD COLUMN review_seq INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE reviews (
        review_id       TEXT PRIMARY KEY,
        document_id     TEXT NOT NULL,
        workspace_id    TEXT NOT NULL,
        version_number  INTEGER NOT NULL,
        decision        TEXT NOT NULL CHECK (decision IN ('approved', 'changes_requested', 'commented')),
        message         TEXT,
        reviewer_kind   TEXT NOT NULL,
        reviewer_id     TEXT NOT NULL,
        reviewer_name   TEXT,
        reviewer_email  TEXT,
        created_ms      INTEGER NOT NULL
    );
    CREATE INDEX reviews_by_document ON reviews (document_id, created_ms, review_id);
    """,
    # 11 -> 12: keys follow their creator (issue 33): the member who made a key (their
    # email); the keys already stored keep NULL, workspace keys that act as the owner.
    """
    ALTER TABLE api_keys ADD COLUMN created_by TEXT;
    CREATE INDEX api_keys_by_creator ON api_keys (workspace_id, created_by) WHERE created_by IS NOT NULL;
    """,
    # 12 -> 13: capped, expiring places (issue 33): a workspace's waiting requests and
    # pending uploads. A lease past expires_ms counts for nothing (the sweep deletes it).
    """
    CREATE TABLE leases (
        scope           TEXT NOT NULL,
        holder          TEXT NOT NULL,
        expires_ms      INTEGER NOT NULL,
        weight          INTEGER NOT NULL DEFAULT 0 CHECK (weight >= 0),
        PRIMARY KEY (scope, holder)
    );
    """,
    # 13 -> 14: secret scanning settings (contract 7g); NULL is the default (block, off).
    """
    ALTER TABLE workspaces ADD COLUMN secret_scanning TEXT;  -- block | warn | off (models.SecretScanning)
    ALTER TABLE workspaces ADD COLUMN pii_scanning TEXT;  -- off | warn
    """,
    # 14 -> 15: workspace exports (contract 7g, adapters/sqlite/exports.py); at most one
    # running (and before its deadline) per workspace, decided under the write lock.
    """
    CREATE TABLE IF NOT EXISTS exports (
        export_id           TEXT PRIMARY KEY,
        workspace_id        TEXT NOT NULL,
        status              TEXT NOT NULL CHECK (status IN ('running', 'ready', 'failed')),
        created_ms          INTEGER NOT NULL,
        deadline_ms         INTEGER NOT NULL,
        expires_at          INTEGER NOT NULL,
        requested_by        TEXT,
        finished_ms         INTEGER,
        blob_key            TEXT,
        size_bytes          INTEGER,
        available_until_ms  INTEGER,
        error               TEXT
    );
    CREATE INDEX IF NOT EXISTS exports_running ON exports (workspace_id, status, deadline_ms);
    """,
    # 15 -> 16: audiences (contract 7f): the recipients of a link, their email codes (a keyed
    # hash, never the code), the audience by entry ("Shared with me"), a verified recipient's
    # feedback; share_access gains 'recipients' (SCHEMA_EDITS[15]: a CHECK cannot be altered).
    """
    ALTER TABLE documents ADD COLUMN share_recipients TEXT;  -- JSON [email | @domain, ...]
    ALTER TABLE feedback ADD COLUMN recipient_email TEXT;
    CREATE TABLE recipients (
        document_id     TEXT NOT NULL,
        email           TEXT NOT NULL,
        workspace_id    TEXT NOT NULL,
        views           INTEGER NOT NULL DEFAULT 0 CHECK (views >= 0),
        first_opened_ms INTEGER,
        last_opened_ms  INTEGER,
        revoked_ms      INTEGER,
        PRIMARY KEY (document_id, email)
    ) WITHOUT ROWID;
    CREATE TABLE recipient_codes (
        document_id     TEXT NOT NULL,
        email           TEXT NOT NULL,
        code_hash       TEXT NOT NULL,
        expires_ms      INTEGER NOT NULL,
        tries           INTEGER NOT NULL DEFAULT 0 CHECK (tries >= 0),
        PRIMARY KEY (document_id, email)
    ) WITHOUT ROWID;
    CREATE TABLE audience (
        entry           TEXT NOT NULL,  -- an email or @domain of a document's share_recipients
        document_id     TEXT NOT NULL,
        workspace_id    TEXT NOT NULL,
        added_ms        INTEGER NOT NULL,
        PRIMARY KEY (entry, document_id)
    ) WITHOUT ROWID;
    CREATE INDEX audience_by_document ON audience (document_id);
    """,
    # 16 -> 17: signed versions (contract 7g): each version's provenance (its signed statement,
    # JSON; NULL for versions made before), and every key that signed (a retired one keeps
    # not_after_ms and stays listed).
    """
    ALTER TABLE versions ADD COLUMN provenance TEXT;
    CREATE TABLE signing_keys (
        kid             TEXT PRIMARY KEY,
        alg             TEXT NOT NULL,
        public_jwk      TEXT NOT NULL,
        holder          TEXT NOT NULL,
        created_ms      INTEGER NOT NULL,
        not_after_ms    INTEGER
    );
    """,
    # 17 -> 18: single sign-on (contract 7f): a session remembers the email domain it signed in
    # at through SSO; a workspace may let people of a domain join (sso_auto_join); a sign-in
    # under way is a one-time token of kind 'sso' (the table is rebuilt for its CHECK).
    """
    ALTER TABLE sessions ADD COLUMN sso_domain TEXT;
    ALTER TABLE workspaces ADD COLUMN sso_auto_join TEXT;  -- JSON {"domain", "role"} or NULL
    CREATE INDEX workspaces_sso_auto_join ON workspaces (json_extract(sso_auto_join, '$.domain'))
        WHERE sso_auto_join IS NOT NULL;
    CREATE TABLE account_tokens_18 (
        token_hash      TEXT PRIMARY KEY,
        kind            TEXT NOT NULL CHECK (kind IN ('verify', 'reset', 'invite', 'login', 'sso')),
        email           TEXT NOT NULL,
        workspace_id    TEXT,
        role            TEXT,
        created_ms      INTEGER NOT NULL,
        expires_ms      INTEGER NOT NULL,
        used_ms         INTEGER,
        password_changed_ms INTEGER,
        invited_by      TEXT,
        expires_at      INTEGER NOT NULL
    );
    INSERT INTO account_tokens_18 (token_hash, kind, email, workspace_id, role, created_ms, expires_ms, used_ms,
                                   password_changed_ms, invited_by, expires_at)
        SELECT token_hash, kind, email, workspace_id, role, created_ms, expires_ms, used_ms,
               password_changed_ms, invited_by, expires_at FROM account_tokens;
    DROP TABLE account_tokens;
    ALTER TABLE account_tokens_18 RENAME TO account_tokens;
    CREATE INDEX account_tokens_invites ON account_tokens (workspace_id, kind, created_ms);
    """,
    # 18 -> 19: the invitations to one address, newest first (PeopleRepository.invites_for: the
    # welcome page of a person in no workspace) are searched by index, not by scanning every token.
    """
    CREATE INDEX account_tokens_by_invitee ON account_tokens (email, kind, created_ms);
    """,
    # 19 -> 20: a removal sticks (contract 7f): removing a member leaves a mark (in the removal's
    # transaction) that keeps single sign-on's auto-join from adding them back; an accepted
    # invitation or a deliberate add deletes it.
    """
    CREATE TABLE member_removals (
        workspace_id TEXT NOT NULL,
        email TEXT NOT NULL,
        removed_by TEXT NOT NULL,
        removed_ms INTEGER NOT NULL,
        PRIMARY KEY (workspace_id, email)
    );
    """,
]


def _allow_recipients_access(tx: sqlite3.Connection) -> None:
    """documents.share_access's CHECK gains 'recipients': SQLite cannot alter a CHECK, and
    rebuilding the table would touch every foreign key to it, so the stored definition is
    widened in place, as SQLite's ALTER TABLE documentation describes for constraints
    (writable_schema, then a new schema_version so every connection reads it again)."""
    old = "CHECK (share_access IN ('public', 'workspace'))"
    new = "CHECK (share_access IN ('public', 'workspace', 'recipients'))"
    version = tx.execute("PRAGMA schema_version").fetchone()[0]
    tx.execute("PRAGMA writable_schema = ON")
    try:
        tx.execute("UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = 'documents'",
                   (old, new))
        tx.execute(f"PRAGMA schema_version = {int(version) + 1}")
    finally:
        tx.execute("PRAGMA writable_schema = OFF")


# Changes a migration's statements cannot say, run right after MIGRATIONS[i].
SCHEMA_EDITS = {15: _allow_recipients_access}

SCHEMA_VERSION = len(MIGRATIONS)
JSON_COLUMNS = ("writes", "hits", "files", "detail", "anchor", "payload", "events", "secrets", "suggestion",
                "review_decisions", "review_requested", "share_recipients", "sso_auto_join")


def row_dict(row: Optional[sqlite3.Row]) -> Optional[dict]:
    """A row as the record the ports promise: absent values left out (as DynamoDB
    does), JSON logs decoded, `deleting` only when set."""
    if row is None:
        return None
    out: dict[str, Any] = {}
    for name in row.keys():
        value = row[name]
        if value is None:
            continue
        if name in JSON_COLUMNS:
            value = json.loads(value)
        elif name == "deleting":
            if not value:
                continue
            value = True
        elif name == "share_enabled":
            value = bool(value)
        out[name] = value
    return out


class Database:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self.reserve = Reserve(self.path.parent)
        self._sweep_lock = threading.Lock()
        self._last_sweep = time.time()  # the first sweep one interval after opening
        self._migrate()
        self.reserve.ensure()

    # ---------------------------------------------------------------- connections

    def connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _migrate(self) -> None:
        conn = self.connection()
        conn.execute("PRAGMA journal_mode = WAL")
        with self.write() as tx:
            version = tx.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise RuntimeError(f"{self.path} has schema {version}; this code knows up to {SCHEMA_VERSION}")
            for number in range(version, SCHEMA_VERSION):
                for statement in _statements(MIGRATIONS[number]):
                    tx.execute(statement)
                if number in SCHEMA_EDITS:
                    SCHEMA_EDITS[number](tx)
            if version != SCHEMA_VERSION:
                tx.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # ---------------------------------------------------------------- transactions

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One atomic write: BEGIN IMMEDIATE (the write lock, waiting up to the busy
        timeout), the body, COMMIT. Any exception in the body rolls back. Then, now and
        then, the sweep of expired rows."""
        with self.write_only() as conn:
            yield conn
        self._maybe_sweep()

    def _maybe_sweep(self) -> None:
        now = time.time()
        if now - self._last_sweep < SWEEP_INTERVAL_SECONDS or not self._sweep_lock.acquire(blocking=False):
            return
        try:
            self._last_sweep = now
            self.purge_expired(int((now - SWEEP_GRACE_SECONDS) * 1000))
        except StorageUnavailable:
            pass  # the next sweep tries again
        finally:
            self._sweep_lock.release()

    def purge_expired(self, now_ms: int) -> dict[str, int]:
        """Delete every expired row (see EXPIRED); how many per table."""
        def work():
            counts = {}
            with self.write_only() as tx:
                for table, condition in EXPIRED:
                    counts[table] = tx.execute(f"DELETE FROM {table} WHERE {condition}",  # noqa: S608
                                               {"s": now_ms // 1000, "ms": now_ms}).rowcount
            return counts

        return self.deleting(work)

    @contextlib.contextmanager
    def write_only(self) -> Iterator[sqlite3.Connection]:
        """write() without the sweep afterwards (the sweep's own transaction)."""
        conn = self.connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _refused(exc) from exc
        try:
            yield conn
        except BaseException as exc:
            _rollback(conn)
            if isinstance(exc, sqlite3.Error):
                raise _refused(exc) from exc
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            _rollback(conn)
            if _code(exc) == "SQLITE_FULL" and not conn.in_transaction:
                raise StorageFull(_code(exc)) from exc  # rolled back: nothing was applied
            raise OutcomeUnknown(_code(exc)) from exc

    def deleting(self, work):
        """Run `work()` (a delete: it frees space), spending the disk reserve if the
        disk is full. Returns what `work` returns."""
        try:
            result = work()
        except StorageFull:
            if not self.reserve.release():
                raise
            result = work()
        self.reserve.ensure()  # made again once the delete left room for it
        return result

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """Several reads that see one consistent state."""
        conn = self.connection()
        try:
            conn.execute("BEGIN")
            yield conn
        except sqlite3.Error as exc:
            raise StorageUnavailable(_code(exc)) from exc
        finally:
            _rollback(conn)

    def one(self, sql: str, params: tuple = ()) -> Optional[dict]:
        try:
            return row_dict(self.connection().execute(sql, params).fetchone())
        except sqlite3.Error as exc:
            raise StorageUnavailable(_code(exc)) from exc

    def all(self, sql: str, params: tuple = ()) -> list[dict]:
        try:
            return [d for r in self.connection().execute(sql, params).fetchall() if (d := row_dict(r)) is not None]
        except sqlite3.Error as exc:
            raise StorageUnavailable(_code(exc)) from exc


def one(conn: sqlite3.Connection, sql: str, params: tuple = ()) -> Optional[dict]:
    return row_dict(conn.execute(sql, params).fetchone())


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:
            pass


def _refused(exc: sqlite3.Error) -> WriteRefused:
    return StorageFull(_code(exc)) if _code(exc) == "SQLITE_FULL" else WriteRefused(_code(exc))


def _code(exc: sqlite3.Error) -> str:
    return getattr(exc, "sqlite_errorname", None) or type(exc).__name__


def _statements(script: str) -> list[str]:
    """Split a migration into statements (executescript would COMMIT on its own)."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements
