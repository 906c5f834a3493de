"""Recounting a workspace's bundle files (the backfill of issue 24's "left alone"), on both stores.

Finding: the storage quota counts each distinct bundle file once per workspace since issue 24.
SQLite's migration 9 counted the files already stored; on DynamoDB, files stored before the
change were in no workspace's `storage_bytes`, had no reference counts, and their documents no
`has_files`, so deleting them freed nothing and they never counted. `recount-files` (services/
maintenance.recount_files, DocumentRepository.recount_files) counts them from the live versions;
a second run changes nothing. The "before the change" state is made here by removing what the
change writes (the counts, their bytes, `has_files`), as an old stack has it.
"""
from __future__ import annotations

import pytest

from tests.helpers import BUNDLE_CSS, BUNDLE_JS, publish_bundle

from chalicelib.services.auth import credentials_from_key
from chalicelib.services.maintenance import recount_files

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)


def _usage(services, key) -> int:
    return services.workspaces.me(credentials_from_key(key)).workspace.usage.storage_bytes


def _as_before_the_quota_counted_files(ctx, storage: str, workspace_id: str, document_ids: list[str]) -> None:
    """Remove what issue 24 writes for files: the workspace's counts, their bytes in its
    usage and (DynamoDB) the documents' has_files."""
    if storage == "sqlite":
        with ctx.documents.db.write() as tx:
            (held,) = tx.execute("SELECT COALESCE(SUM(size_bytes), 0) FROM workspace_files WHERE workspace_id = ?",
                                 (workspace_id,)).fetchone()
            tx.execute("DELETE FROM workspace_files WHERE workspace_id = ?", (workspace_id,))
            tx.execute("UPDATE workspaces SET storage_bytes = storage_bytes - ? WHERE id = ?", (held, workspace_id))
        return
    from chalicelib.adapters.aws.keys import FILE_BUCKETS, document_key, workspace_files_key, workspace_key

    table = ctx.documents.table
    held = 0
    for bucket in range(FILE_BUCKETS):
        item = table.get(workspace_files_key(workspace_id, bucket)) or {}
        held += sum(int(v) for k, v in item.items() if k.startswith("s_"))
        table.delete(workspace_files_key(workspace_id, bucket))
    table.update(workspace_key(workspace_id), "ADD storage_bytes :d", values={":d": -held})
    for document_id in document_ids:
        table.update(document_key(document_id), "REMOVE has_files")


@BOTH
def test_files_stored_before_the_quota_counted_them_are_counted_once_and_released(services, storage):
    ctx = services.documents.ctx
    ws, created = services.workspaces.create_workspace("Old files", "pro")
    key = created.api_key
    v1 = publish_bundle(services, key, "<p>one</p>", [("style.css", BUNDLE_CSS), ("app.js", BUNDLE_JS)])                  # 10 bytes
    v2 = publish_bundle(services, key, "<p>two!</p>", [("style.css", BUNDLE_CSS)], v1.document_id)                   # 11
    other = publish_bundle(services, key, "<p>other</p>", [("s.css", BUNDLE_CSS)])                                  # 12
    counted = 10 + 11 + 12 + 1050 + 640
    assert _usage(services, key) == counted
    _as_before_the_quota_counted_files(ctx, storage, ws.id, [v1.document_id, other.document_id])
    assert _usage(services, key) == 10 + 11 + 12  # an old stack: the files count nothing

    first = recount_files(ctx)  # every workspace with files in the blob store
    assert first["workspaces"] == [{"workspace_id": ws.id, "files": 2, "changed": 2, "bytes_added": 1050 + 640}]
    assert _usage(services, key) == counted
    again = recount_files(ctx, [ws.id])
    assert again["workspaces"] == [{"workspace_id": ws.id, "files": 2, "changed": 0, "bytes_added": 0}]
    assert _usage(services, key) == counted

    # Counted as if published today: freed with the last version that refers to them.
    services.documents.delete_version(credentials_from_key(key), v1.document_id, v1.version_id)  # app.js goes
    assert _usage(services, key) == 11 + 12 + 1050
    services.documents.delete(credentials_from_key(key), other.document_id)  # style.css: v2 keeps it
    assert _usage(services, key) == 11 + 1050
    services.documents.delete(credentials_from_key(key), v2.document_id)
    assert _usage(services, key) == 0
    assert recount_files(ctx, [ws.id])["workspaces"][0]["changed"] == 0


@BOTH
def test_a_recounted_file_stays_counted_while_a_version_uses_it(services, storage):
    ctx = services.documents.ctx
    ws, created = services.workspaces.create_workspace("Drift", "pro")
    key = created.api_key
    doc = publish_bundle(services, key, "<p>one</p>", [("style.css", BUNDLE_CSS)])                                 # 10 bytes
    publish_bundle(services, key, "<p>two!</p>", [("style.css", BUNDLE_CSS)], doc.document_id)                      # 11
    _as_before_the_quota_counted_files(ctx, storage, ws.id, [doc.document_id])
    # Half a backfill: the file counted with one reference where two versions use it.
    assert recount_files(ctx, [ws.id])["workspaces"][0] == {
        "workspace_id": ws.id, "files": 1, "changed": 1, "bytes_added": 1050}
    services.documents.delete_version(credentials_from_key(key), doc.document_id,
                                      services.documents.ctx.documents.get_with_versions(doc.document_id)[1][0].version_id)
    assert _usage(services, key) == 11 + 1050  # the other version still uses it
    assert recount_files(ctx, ["ws_nosuch"])["workspaces"] == [{"workspace_id": "ws_nosuch",
                                                                 "error": "no such workspace"}]


def test_the_admin_command_recounts_the_embedded_store(tmp_path):
    """`make admin ARGS="recount-files"` on `make run`'s store: one JSON line; a workspace
    without files is left alone (it is not listed), and a second run changes nothing."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "DOCPUB_DATA_DIR": str(tmp_path), "DOCPUB_STORAGE": "sqlite"}

    def admin(*args: str) -> dict:
        ran = subprocess.run([sys.executable, "-m", "scripts.admin", *args], cwd=root, env=env,
                             capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0, ran.stderr
        [line] = ran.stdout.strip().splitlines()
        return json.loads(line)

    created = admin("create-workspace", "--name", "Files", "--plan", "pro")
    assert admin("recount-files") == {"workspaces": [], "changed": 0, "bytes_added": 0}
    assert admin("recount-files", created["workspace_id"]) == {
        "workspaces": [{"workspace_id": created["workspace_id"], "files": 0, "changed": 0, "bytes_added": 0}],
        "changed": 0, "bytes_added": 0}
