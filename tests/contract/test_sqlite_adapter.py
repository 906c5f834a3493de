"""The embedded adapter's own promises: durable settings, migrations, write
transactions that take the lock first, blobs durable before the metadata commit,
driver errors as port errors, selection by DOCPUB_STORAGE, and the one-time import
of the old snapshot format."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from chalicelib.adapters.sqlite import repositories
from chalicelib.adapters.sqlite.layout import DATABASE_FILE
from chalicelib.adapters.sqlite.db import SCHEMA_VERSION, Database
from chalicelib.ports import BlobNotFound, StorageUnavailable, WriteRefused, version_key
from chalicelib.ports.records import Workspace

PROJECT = Path(__file__).resolve().parents[2]
TABLES = {"workspaces", "api_keys", "documents", "versions", "share_links", "idempotency", "rate_logs",
          "feedback", "users", "sessions", "cdn_pending",
          # OAuth for MCP (adapters/sqlite/oauth.py)
          "oauth_clients", "oauth_codes", "oauth_grants", "oauth_access_tokens", "oauth_refresh_tokens",
          "view_days", "view_versions", "view_limits",
          # people (adapters/sqlite/people.py)
          "members", "member_removals", "account_tokens", "activity",
          # the review loop (adapters/sqlite/feedback.py, webhooks.py)
          "feedback_replies", "events", "webhooks", "webhook_deliveries", "sqlite_sequence",
          # bundle files counted once per workspace (issue 24)
          "workspace_files",
          # reviews (contract 7e; adapters/sqlite/reviews.py)
          "reviews",
          # signed versions (contract 7g; adapters/sqlite/signing_keys.py)
          "signing_keys",
          # waiting requests and pending uploads (issue 33)
          "leases",
          # workspace exports (contract 7g; adapters/sqlite/exports.py)
          "exports",
          # audiences (contract 7f; adapters/sqlite/recipients.py)
          "recipients", "recipient_codes", "audience"}


def undo_migration_17(conn) -> None:
    """Back to schema 16: no signed versions (no provenance column, no signing keys)."""
    conn.execute("DROP TABLE signing_keys")
    conn.execute("ALTER TABLE versions DROP COLUMN provenance")


def undo_migration_16(conn) -> None:
    """Back to schema 15: no audiences, and share_access's CHECK without 'recipients'."""
    for table in ("recipients", "recipient_codes", "audience"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("ALTER TABLE documents DROP COLUMN share_recipients")
    conn.execute("ALTER TABLE feedback DROP COLUMN recipient_email")
    version = conn.execute("PRAGMA schema_version").fetchone()[0]
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute("UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE name = 'documents'",
                 ("CHECK (share_access IN ('public', 'workspace', 'recipients'))",
                  "CHECK (share_access IN ('public', 'workspace'))"))
    conn.execute(f"PRAGMA schema_version = {version + 1}")
    conn.execute("PRAGMA writable_schema = OFF")


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "data"


@pytest.fixture
def repos(data_dir):
    return repositories(data_dir, shared=False)


def services_on(repos):
    from chalicelib.services.context import Context
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.workspaces import WorkspaceService
    from tests.helpers import FakeClock

    ctx = Context(repos=repos, clock=FakeClock())
    return ctx, DocumentService(ctx), WorkspaceService(ctx)


def publish(documents, api_key, title="Doc", html="<p>hello</p>", document_id=None):
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key

    return documents.publish(credentials_from_key(api_key),
                             PublishRequest(title=title, html=html, document_id=document_id)).response


# ------------------------------------------------------------------ settings and schema

def test_connections_are_durable_and_the_schema_is_relational(repos, data_dir):
    conn = repos.documents.db.connection()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    assert conn.isolation_level is None  # explicit transactions only
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == TABLES
    assert (data_dir / DATABASE_FILE).exists() and (data_dir / "blobs").is_dir()


def test_each_thread_has_its_own_connection(repos):
    db = repos.documents.db
    mine = db.connection()
    theirs = []
    thread = threading.Thread(target=lambda: theirs.append(db.connection()))
    thread.start()
    thread.join()
    assert theirs[0] is not mine and db.connection() is mine


def test_migrations_run_once_and_a_newer_schema_is_refused(data_dir):
    Database(data_dir / DATABASE_FILE).close()
    db = Database(data_dir / DATABASE_FILE)  # reopening migrates nothing and loses nothing
    assert db.one("PRAGMA user_version")["user_version"] == SCHEMA_VERSION
    db.connection().execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(RuntimeError, match="schema"):
        Database(data_dir / DATABASE_FILE)


def test_a_half_applied_migration_is_rolled_back(data_dir, monkeypatch):
    from chalicelib.adapters.sqlite import db as db_module

    monkeypatch.setattr(db_module, "MIGRATIONS", [db_module.MIGRATIONS[0], "CREATE TABLE extra (x); BROKEN SQL;"])
    monkeypatch.setattr(db_module, "SCHEMA_VERSION", 2)
    with pytest.raises(WriteRefused):
        Database(data_dir / DATABASE_FILE)
    conn = sqlite3.connect(data_dir / DATABASE_FILE)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'workspaces'").fetchone()[0] == 0


def test_migration_9_counts_the_files_already_stored(repos, data_dir, monkeypatch):
    """Bundle files stored before issue 24's file accounting are counted once per
    workspace when the store is opened (the reference counts are rebuilt from versions)."""
    from chalicelib.models import PublishRequest
    from chalicelib.services.auth import credentials_from_key

    _, documents, workspaces = services_on(repos)
    ws, key = workspaces.create_workspace("Old", "pro")
    who = credentials_from_key(key.api_key)
    a, b = {"path": "a.css", "content": "a" * 100}, {"path": "b.css", "content": "b" * 50}
    doc = documents.publish(who, PublishRequest(title="B", html="<p>1</p>", files=[a, b])).response  # type: ignore[call-arg]
    documents.publish(who, PublishRequest(title="B", html="<p>2</p>", document_id=doc.document_id,  # type: ignore[call-arg]
                                          files=[a, {**a, "path": "copy.css"}]))
    counted = repos.workspaces.get(ws.id).storage_bytes
    assert counted == 8 + 8 + 150
    conn = repos.documents.db.connection()  # back to schema 8: pages counted, files not
    conn.execute("DROP TABLE workspace_files")
    conn.execute("UPDATE workspaces SET storage_bytes = 16")
    conn.execute("PRAGMA user_version = 8")
    from chalicelib.adapters.sqlite import db as db_module

    # Opened by the code of schema 9 (the later migrations' tables and columns are there already).
    monkeypatch.setattr(db_module, "SCHEMA_VERSION", 9)
    reopened = Database(data_dir / DATABASE_FILE)
    assert reopened.one("SELECT storage_bytes FROM workspaces WHERE id = ?", (ws.id,))["storage_bytes"] == counted
    refs = {r["size_bytes"]: r["refs"] for r in reopened.all("SELECT * FROM workspace_files")}
    assert refs == {100: 2, 50: 1}


def undo_migration_12(conn) -> None:
    conn.execute("DROP INDEX api_keys_by_creator")
    conn.execute("ALTER TABLE api_keys DROP COLUMN created_by")


def test_migration_12_keeps_the_keys_already_stored_as_workspace_keys(repos, data_dir):
    """Keys made before keys had creators belong to the workspace (contract 4: they act
    as its owner); keys made after carry their creator."""
    from chalicelib.ports.records import ApiKey

    repos.workspaces.create(Workspace("ws_old", "Old", "free", 1))
    repos.keys.create(ApiKey(key_id="key_old", workspace_id="ws_old", key_hash="a" * 64, name="ci",
                             created_ms=5, created_by="ed@x.io"), None)
    conn = repos.documents.db.connection()  # back to schema 11: no creator column
    undo_migration_12(conn)
    conn.execute("DROP TABLE leases")  # and what 12 -> 13 adds
    conn.execute("ALTER TABLE workspaces DROP COLUMN secret_scanning")  # and what 13 -> 14 adds
    conn.execute("ALTER TABLE workspaces DROP COLUMN pii_scanning")
    undo_migration_20(conn)
    undo_migration_19(conn)
    undo_migration_18(conn)
    undo_migration_17(conn)
    undo_migration_16(conn)
    conn.execute("DROP TABLE exports")  # and what 14 -> 15 adds
    conn.execute("PRAGMA user_version = 11")
    reopened = repositories(data_dir, shared=False)
    assert reopened.keys.get("key_old").created_by is None
    reopened.keys.create(ApiKey(key_id="key_new", workspace_id="ws_old", key_hash="b" * 64, name="ci",
                                created_ms=6, created_by="ed@x.io"), None)
    assert reopened.keys.get("key_new").created_by == "ed@x.io"


# ------------------------------------------------------------------ transactions

def test_every_write_takes_the_lock_before_it_reads(repos):
    ctx, documents, workspaces = services_on(repos)
    statements: list[str] = []
    repos.documents.db.connection().set_trace_callback(statements.append)
    _, key = workspaces.create_workspace("Traced", "free")
    doc = publish(documents, key.api_key)
    publish(documents, key.api_key, html="<p>v2</p>", document_id=doc.document_id)
    repos.documents.db.connection().set_trace_callback(None)
    transaction = None
    writes = 0
    for sql in statements:
        head = sql.strip().split()[0].upper()
        if head == "BEGIN":
            transaction = sql.strip().upper()
        elif head in ("COMMIT", "ROLLBACK"):
            transaction = None
        elif head in ("INSERT", "UPDATE", "DELETE"):
            writes += 1
            assert transaction == "BEGIN IMMEDIATE", sql
    assert writes >= 8


def test_a_locked_database_refuses_writes_cleanly_and_still_serves_reads(repos, monkeypatch):
    from chalicelib.adapters.sqlite import db as db_module

    repos.workspaces.create(Workspace("ws1", "A", "free", 1))
    other = sqlite3.connect(repos.documents.db.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        result = []

        def write():
            monkeypatch.setattr(db_module, "BUSY_TIMEOUT_MS", 50)
            try:
                repos.workspaces.set_plan("ws1", "pro")
            except StorageUnavailable as exc:
                result.append(exc)

        thread = threading.Thread(target=write)  # a fresh connection, with the short timeout
        thread.start()
        thread.join()
        assert isinstance(result[0], WriteRefused) and result[0].code.startswith("SQLITE_BUSY")
        assert repos.workspaces.get("ws1").plan == "free"  # WAL: reads go on
    finally:
        other.execute("ROLLBACK")
    assert repos.workspaces.set_plan("ws1", "pro").plan == "pro"


def test_a_locked_database_is_503_not_500(sqlite_storage, client, monkeypatch):
    from chalicelib.adapters.sqlite import db as db_module
    from tests.helpers import post_json

    monkeypatch.setattr(db_module, "BUSY_TIMEOUT_MS", 50)
    from chalicelib import wiring

    _, key = wiring.workspaces().create_workspace("Busy", "pro")
    path = wiring.documents().ctx.documents.db.path
    other = sqlite3.connect(path, isolation_level=None, timeout=0.05)
    other.execute("BEGIN IMMEDIATE")
    try:
        wiring.documents().ctx.documents.db.close()  # the next connection gets the short timeout
        r = post_json(client, "/api/v1/publish", {"title": "T", "html": "<p>x</p>"}, key.api_key)
    finally:
        other.execute("ROLLBACK")
    assert r.status_code == 503, r.body
    assert json.loads(r.body)["error"]["code"] == "service_unavailable"
    assert wiring.documents().ctx.blobs.list_keys("documents/") == []  # refused: its blob discarded


# ------------------------------------------------------------------ blobs

def test_a_blob_is_fsynced_and_renamed_before_the_metadata_commit(repos, monkeypatch):
    ctx, documents, workspaces = services_on(repos)
    _, key = workspaces.create_workspace("Order", "free")
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append("fsync-dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "fsync-file")
        real_fsync(fd)

    def replace(src, dst):
        events.append("rename")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    repos.documents.db.connection().set_trace_callback(
        lambda sql: events.append("commit") if sql.strip().upper() == "COMMIT" else None)
    publish(documents, key.api_key)
    repos.documents.db.connection().set_trace_callback(None)
    first_blob = events.index("fsync-file")
    assert events[first_blob:first_blob + 2] == ["fsync-file", "rename"]
    assert "fsync-dir" in events[first_blob + 2:events.index("commit", first_blob)]
    [stored] = ctx.blobs.list_keys("documents/")
    assert not any(p.name.startswith(".tmp-") for p in repos.blobs.root.rglob("*"))
    assert stored[0].endswith(".html")


def test_blob_keys_cannot_leave_the_blob_folder(repos):
    for key in ("../docpub.sqlite3", "documents/../../x", "/etc/passwd", "documents/a/.tmp-x"):
        with pytest.raises(ValueError):
            repos.blobs.put_html(key, b"x")
    with pytest.raises(BlobNotFound):
        repos.blobs.get_html(version_key("w", "d", "v"))


def test_the_orphan_sweep_works_on_the_file_store(repos):
    from chalicelib.services.maintenance import GRACE_SECONDS, sweep_orphans

    ctx, documents, workspaces = services_on(repos)
    _, key = workspaces.create_workspace("Sweep", "free")
    doc = publish(documents, key.api_key)
    workspace_id = repos.documents.get(doc.document_id).workspace_id
    repos.blobs.put_html(version_key(workspace_id, doc.document_id, "v_orphan"), b"<p>never committed</p>")
    ctx.clock.now += GRACE_SECONDS + 10 ** 9  # far past the grace period (file times are real)
    assert sweep_orphans(ctx)["deleted"] == 1
    assert [k for k, _ in repos.blobs.list_keys("documents/")] == [
        version_key(workspace_id, doc.document_id, doc.version_id)]


# ------------------------------------------------------------------ a killed process loses nothing it acknowledged

CHILD = """
import os, signal, sys
from chalicelib.adapters.sqlite import repositories
from chalicelib.services.context import Context
from chalicelib.services.documents import DocumentService
from chalicelib.services.workspaces import WorkspaceService
from chalicelib.models import PublishRequest
from chalicelib.services.auth import credentials_from_key
ctx = Context(repos=repositories(sys.argv[1]))
_, key = WorkspaceService(ctx).create_workspace("Killed", "pro")
who = credentials_from_key(key.api_key)
ids = [DocumentService(ctx).publish(who, PublishRequest(title=f"D{i}", html=f"<p>{i}</p>")).response.document_id
       for i in range(5)]
print(key.api_key, *ids, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_acknowledged_writes_survive_sigkill(data_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCPUB_")}
    out = subprocess.run([sys.executable, "-c", CHILD, str(data_dir)], cwd=PROJECT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == -signal.SIGKILL, out.stderr[-2000:]
    api_key, *ids = out.stdout.split()
    ctx, documents, _ = services_on(repositories(data_dir, shared=False))
    from chalicelib.services.auth import credentials_from_key

    listed = documents.list(credentials_from_key(api_key), limit=10).documents
    assert sorted(d.document_id for d in listed) == sorted(ids)
    assert {documents.get(credentials_from_key(api_key), i, include_html=True).html for i in ids} == {
        f"<p>{i}</p>" for i in range(5)}


# ------------------------------------------------------------------ selection

def test_storage_selection(monkeypatch, tmp_path):
    from chalicelib import config
    from chalicelib.wiring import build_repositories

    monkeypatch.delenv("DOCPUB_STORAGE", raising=False)
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    assert config.storage() == "sqlite"
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "docpub")
    assert config.storage() == "aws"  # in Lambda
    monkeypatch.setenv("DOCPUB_STORAGE", "sqlite")
    assert config.storage() == "sqlite"  # explicit wins
    monkeypatch.setenv("DOCPUB_DATA_DIR", str(tmp_path / "chosen"))
    built = build_repositories()
    assert built.kind == "sqlite" and (tmp_path / "chosen" / DATABASE_FILE).exists()
    assert build_repositories("aws").kind == "aws"  # clients are made lazily: nothing is called
    with pytest.raises(ValueError, match="DOCPUB_STORAGE"):
        build_repositories("postgres")


def test_the_packaged_lambda_sets_aws_storage():
    text = (PROJECT / "infra" / "resources.yaml").read_text()
    assert "DOCPUB_STORAGE: aws" in text


def test_services_import_ports_not_adapters():
    import ast

    for path in sorted((PROJECT / "chalicelib" / "services").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert not name.startswith(("chalicelib.adapters", "botocore", "boto3", "sqlite3", "moto")), \
                    f"{path.name} imports {name}"


# ------------------------------------------------------------------ import of the old snapshot format

@pytest.mark.aws
def test_the_old_snapshot_format_is_imported_once_and_kept(aws_storage, data_dir):
    """Data made on DynamoDB (moto), saved in the old local-stack format, imported into SQLite."""
    from chalicelib import config
    from chalicelib.wiring import build_repositories
    from chalicelib.adapters.aws import clients as aws
    from chalicelib.adapters.sqlite.importer import import_snapshot
    from chalicelib.models import FeedbackSubmission
    from chalicelib.services.accounts import AccountService
    from chalicelib.services.feedback import FeedbackService

    ctx, documents, workspaces = services_on(build_repositories("aws"))
    _, key = workspaces.create_workspace("Old", "free")
    doc = publish(documents, key.api_key, html="<p>one</p>")
    publish(documents, key.api_key, html="<p>two</p>", document_id=doc.document_id)
    gone = publish(documents, key.api_key, title="Gone")
    from chalicelib.services.auth import credentials_from_key

    documents.delete(credentials_from_key(key.api_key), gone.document_id)
    FeedbackService(ctx).submit(doc.share_url.rsplit("/", 1)[1], FeedbackSubmission(message="nice"), "1.2.3.4", None)
    from chalicelib.ports.records import User

    ctx.users.create(User(email="o@example.com", password_hash="$argon2id$x", workspace_id=key.workspace_id,
                          role="owner", created_ms=1, password_changed_ms=1))
    session = AccountService(ctx)._start("o@example.com", key.workspace_id)
    # The old format: every item as DynamoDB JSON, every object as a file.
    items = aws.dynamodb().scan(TableName=config.table_name())["Items"]
    data_dir.mkdir(parents=True)
    (data_dir / "dynamodb-items.json").write_text(json.dumps({"items": items}))
    for obj in aws.s3().list_objects_v2(Bucket=config.bucket_name())["Contents"]:
        target = data_dir / "s3" / obj["Key"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(aws.s3().get_object(Bucket=config.bucket_name(), Key=obj["Key"])["Body"].read())

    counts = import_snapshot(data_dir)
    assert counts["documents"] == 1 and counts["versions"] == 2 and counts["objects"] == 2
    assert counts["feedback"] == 1 and counts["api_keys"] == 1 and counts["sessions"] == 1
    assert not (data_dir / "dynamodb-items.json").exists() and (data_dir / "dynamodb-items.json.imported").exists()
    assert (data_dir / "s3.imported").is_dir() and not (data_dir / "s3").exists()  # renamed, never deleted
    assert import_snapshot(data_dir) is None  # once

    embedded = repositories(data_dir, shared=False)
    new_ctx, new_documents, new_workspaces = services_on(embedded)
    who = credentials_from_key(key.api_key)
    detail = new_documents.get(who, doc.document_id, include_html=True)
    assert detail.html == "<p>two</p>" and [v.number for v in detail.versions] == [1, 2]
    assert detail.open_feedback_count == 1
    assert new_documents.get_html(who, doc.document_id, 1)[2] == "<p>one</p>"
    assert [d.document_id for d in new_documents.list(who).documents] == [doc.document_id]
    workspace = embedded.workspaces.get(embedded.keys.get(who.key_id).workspace_id)
    assert workspace.document_count == 1 and workspace.key_count == 1
    assert AccountService(new_ctx).session(session.session_id).email == "o@example.com"
    assert embedded.documents.get_share(doc.share_url.rsplit("/", 1)[1]).document_id == doc.document_id
    # Writes go on where they stopped: version 3, the cap counted from the imported count.
    third = publish(new_documents, key.api_key, html="<p>three</p>", document_id=doc.document_id)
    assert third.version_number == 3


def test_opening_a_data_folder_imports_an_old_snapshot(data_dir):
    data_dir.mkdir(parents=True)
    ws = {"PK": {"S": "WS#ws_1"}, "SK": {"S": "WS"}, "id": {"S": "ws_1"}, "name": {"S": "Kept"},
          "plan": {"S": "pro"}, "created_ms": {"N": "5"}, "document_count": {"N": "0"}, "key_count": {"N": "0"}}
    (data_dir / "dynamodb-items.json").write_text(json.dumps({"items": [ws]}))
    opened = repositories(data_dir, shared=False)
    assert opened.workspaces.get("ws_1").name == "Kept"
    assert (data_dir / "dynamodb-items.json.imported").exists()


def test_two_processes_opening_an_old_folder_at_once_import_it_once(data_dir):
    data_dir.mkdir(parents=True)
    items = [{"PK": {"S": f"WS#ws_{i}"}, "SK": {"S": "WS"}, "id": {"S": f"ws_{i}"}, "name": {"S": "N"},
              "plan": {"S": "free"}, "created_ms": {"N": "5"}, "document_count": {"N": "0"},
              "key_count": {"N": "0"}} for i in range(300)]
    (data_dir / "dynamodb-items.json").write_text(json.dumps({"items": items}))
    (data_dir / "s3" / "documents" / "w" / "d").mkdir(parents=True)
    (data_dir / "s3" / "documents" / "w" / "d" / "v.html").write_bytes(b"<p>old</p>")
    script = "import sys; from chalicelib.adapters.sqlite import repositories; repositories(sys.argv[1])"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCPUB_")}
    children = [subprocess.Popen([sys.executable, "-c", script, str(data_dir)], cwd=PROJECT, env=env,
                                 stderr=subprocess.PIPE) for _ in range(3)]
    for child in children:
        assert child.wait(timeout=120) == 0, child.stderr.read().decode()[-2000:]
    opened = repositories(data_dir, shared=False)
    assert opened.documents.db.one("SELECT COUNT(*) AS n FROM workspaces")["n"] == 300
    assert opened.blobs.get_html("documents/w/d/v.html") == b"<p>old</p>"
    assert (data_dir / "s3.imported" / "documents" / "w" / "d" / "v.html").exists()


def test_migration_14_adds_the_scanning_settings_with_their_defaults(data_dir, repos):
    """Contract 7g: a workspace stored before schema 14 reads as block / off."""
    repos.workspaces.create(Workspace(workspace_id="ws_scan", name="Old", plan="free", created_ms=1))
    conn = repos.documents.db.connection()
    conn.execute("ALTER TABLE workspaces DROP COLUMN secret_scanning")
    conn.execute("ALTER TABLE workspaces DROP COLUMN pii_scanning")
    undo_migration_20(conn)
    undo_migration_19(conn)
    undo_migration_18(conn)
    undo_migration_17(conn)
    undo_migration_16(conn)
    conn.execute("DROP TABLE exports")
    conn.execute("PRAGMA user_version = 13")
    reopened = repositories(data_dir, shared=False)
    old = reopened.workspaces.get("ws_scan")
    assert (old.secret_scanning, old.pii_scanning) == (None, None)
    changed = reopened.workspaces.set_fields("ws_scan", {"secret_scanning": "warn", "pii_scanning": "warn"})
    assert (changed.secret_scanning, changed.pii_scanning) == ("warn", "warn")


def test_migration_16_widens_share_access_and_keeps_the_documents_stored(data_dir, repos):
    """Contract 7f: a document stored before schema 16 reads with no recipients, and may then
    become a `recipients` link (the CHECK of schema 7 widened in place, every row kept)."""
    ctx, documents, workspaces = services_on(repos)
    _, created = workspaces.create_workspace("Old")
    doc = publish(documents, created.api_key, title="Before")
    conn = repos.documents.db.connection()
    undo_migration_20(conn)
    undo_migration_19(conn)
    undo_migration_18(conn)
    undo_migration_17(conn)
    undo_migration_16(conn)
    conn.execute("PRAGMA user_version = 15")
    with pytest.raises(Exception):
        conn.execute("UPDATE documents SET share_access = 'recipients'")  # schema 15 refuses it
    reopened = repositories(data_dir, shared=False)
    stored = reopened.documents.get(doc.document_id)
    assert stored.title == "Before" and stored.share_recipients == () and stored.share_access == "public"
    changed = reopened.documents.update_fields(stored, {"share_access": "recipients",
                                                        "share_recipients": ("a@b.example", "@c.example")})
    assert changed.share_access == "recipients" and changed.share_recipients == ("a@b.example", "@c.example")
    assert reopened.documents.db.one("PRAGMA integrity_check")["integrity_check"] == "ok"
    with pytest.raises(Exception):
        reopened.documents.db.connection().execute("UPDATE documents SET share_access = 'nobody'")


def test_migration_17_keeps_versions_stored_before_signing_without_provenance(data_dir, repos):
    """Contract 7g: a version stored before schema 17 reads with no provenance (its route answers
    404 provenance_unavailable); versions made after are signed."""
    ctx, documents, workspaces = services_on(repos)
    _, created = workspaces.create_workspace("Old")
    doc = publish(documents, created.api_key, title="Before")
    conn = repos.documents.db.connection()
    undo_migration_20(conn)
    undo_migration_19(conn)
    undo_migration_18(conn)
    undo_migration_17(conn)
    conn.execute("PRAGMA user_version = 16")
    reopened = repositories(data_dir, shared=False)
    assert reopened.documents.get_version(doc.document_id, 1).provenance is None
    assert reopened.signing_keys.list_keys() == []


def undo_migration_18(conn) -> None:
    """Back to schema 17: no SSO columns; account_tokens may keep its wider CHECK (18 copies it)."""
    conn.execute("DROP INDEX workspaces_sso_auto_join")
    conn.execute("ALTER TABLE workspaces DROP COLUMN sso_auto_join")
    conn.execute("ALTER TABLE sessions DROP COLUMN sso_domain")


def test_migration_18_keeps_tokens_and_sessions_and_takes_sso_states(data_dir, repos):
    """Contract 7f: sessions and one-time tokens stored before schema 18 stay; an SSO
    sign-in's state is a token of kind 'sso' (the table is rebuilt for its CHECK)."""
    from chalicelib.ports.records import AccountToken, DashboardSession, User

    repos.workspaces.create(Workspace(workspace_id="ws_sso", name="Old", plan="free", created_ms=1))
    repos.users.create(User(email="a@x.io", password_hash="x", workspace_id="ws_sso", role="owner", created_ms=1,
                            password_changed_ms=1))
    repos.sessions.create(DashboardSession("h1", "a@x.io", "ws_sso", 1, 10**13, 10**10))
    repos.people.put_token(AccountToken(token_hash="t1", kind="verify", email="a@x.io", created_ms=1,
                                        expires_ms=10**13, expires_at=10**10))
    conn = repos.documents.db.connection()
    undo_migration_20(conn)
    undo_migration_19(conn)
    undo_migration_18(conn)
    conn.execute("PRAGMA user_version = 17")
    reopened = repositories(data_dir, shared=False)
    assert reopened.sessions.get("h1").sso_domain is None
    assert reopened.people.get_token("t1").kind == "verify"
    assert reopened.workspaces.get("ws_sso").sso_auto_join is None
    reopened.people.put_token(AccountToken(token_hash="t2", kind="sso", email="", created_ms=1, expires_ms=10**13,
                                           expires_at=10**10))
    assert reopened.people.use_token("t2", 2).kind == "sso"


def _plan_of(db, call) -> list[str]:
    """The query plan of the SELECT that `call` runs on `db` (captured as SQLite ran it)."""
    from tests.helpers import sqlite_statements

    query = next(s for s in sqlite_statements(db, call) if s.lstrip().upper().startswith("SELECT"))
    return [row[3] for row in db.connection().execute("EXPLAIN QUERY PLAN " + query)]


def test_invitations_to_an_address_are_searched_by_index(repos):
    """PeopleRepository.invites_for (the welcome page of a person in no workspace) searches
    an index by email, newest first, instead of scanning every one-time token."""
    plan = _plan_of(repos.people.db, lambda: repos.people.invites_for("ed@x.io", 1))
    assert any(d.startswith("SEARCH account_tokens USING INDEX account_tokens_by_invitee") for d in plan), plan
    assert not any(d.startswith("SCAN") or "TEMP B-TREE" in d for d in plan), plan


def undo_migration_19(conn) -> None:
    """Back to schema 18: no index of invitations by email."""
    conn.execute("DROP INDEX account_tokens_by_invitee")


def test_migration_19_indexes_the_invitations_already_stored(data_dir, repos):
    from chalicelib.ports.records import AccountToken

    repos.workspaces.create(Workspace(workspace_id="ws_inv", name="Old", plan="free", created_ms=1))
    for n, email in enumerate(("ed@x.io", "ed@x.io", "vi@x.io")):
        repos.people.put_token(AccountToken(token_hash=f"t{n}", kind="invite", email=email, workspace_id="ws_inv",
                                            role="viewer", created_ms=n, expires_ms=10**13, expires_at=10**10))
    conn = repos.documents.db.connection()
    undo_migration_20(conn)
    undo_migration_19(conn)
    conn.execute("PRAGMA user_version = 18")
    reopened = repositories(data_dir, shared=False)
    db = reopened.people.db
    assert db.one("PRAGMA user_version")["user_version"] == SCHEMA_VERSION
    assert db.one("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'account_tokens_by_invitee'")
    assert [t.token_hash for t in reopened.people.invites_for("ed@x.io", 5)] == ["t1", "t0"]
    assert db.one("PRAGMA integrity_check")["integrity_check"] == "ok"


def undo_migration_20(conn) -> None:
    """Back to schema 19: no removal marks."""
    conn.execute("DROP TABLE member_removals")


def test_migration_20_keeps_the_members_and_takes_removal_marks(data_dir, repos):
    from chalicelib.ports.people import Removed
    from chalicelib.ports.records import Member, RemovalMark, User

    repos.workspaces.create(Workspace(workspace_id="ws_rm", name="Old", plan="free", created_ms=1))
    for n, email in enumerate(("own@x.io", "ed@x.io")):
        repos.users.create(User(email=email, password_hash="x", workspace_id="ws_rm", created_ms=1))
        repos.people.add_member(Member("ws_rm", email, "owner" if n == 0 else "editor", 10 + n))
    conn = repos.documents.db.connection()
    undo_migration_20(conn)
    conn.execute("PRAGMA user_version = 19")
    reopened = repositories(data_dir, shared=False)
    db = reopened.people.db
    assert db.one("PRAGMA user_version")["user_version"] == SCHEMA_VERSION
    assert [m.email for m in reopened.people.list_members("ws_rm")] == ["own@x.io", "ed@x.io"]
    assert reopened.people.get_removal("ws_rm", "ed@x.io") is None  # nobody was marked before
    reopened.people.remove_member("ws_rm", "ed@x.io", 50, removed_by="own@x.io")
    assert reopened.people.get_removal("ws_rm", "ed@x.io") == RemovalMark("ws_rm", "ed@x.io", "own@x.io", 50)
    with pytest.raises(Removed):
        reopened.people.add_member(Member("ws_rm", "ed@x.io", "editor", 60, "sso"), unless_removed=True)
    assert db.one("PRAGMA integrity_check")["integrity_check"] == "ok"
