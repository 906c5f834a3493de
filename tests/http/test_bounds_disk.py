"""Issue 24: a full disk on the embedded store. Writes answer 507
`insufficient_storage`, reads and deletes keep working, health answers 503
`degraded`, and nothing is left half-written. Finding: a full disk gave 500 on
writes and 503 on DELETE while health said ok."""
from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.helpers import post_json


def _publish(client, key, html, document_id=None):
    body = {"title": "Doc", "html": html}
    if document_id:
        body["document_id"] = document_id
    return post_json(client, "/api/v1/publish", body, key)


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_enospc_on_a_blob_write_is_507_and_leaves_nothing(client, workspace, monkeypatch, tmp_path):
    from chalicelib.adapters.sqlite import blobs

    _, key = workspace
    first = json.loads(_publish(client, key, "<p>one</p>").body)
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(blobs.os, "fsync", full)
    r = _publish(client, key, "<p>two</p>", first["document_id"])
    assert r.status_code == 507, r.body
    assert json.loads(r.body)["error"]["code"] == "insufficient_storage"
    monkeypatch.setattr(blobs.os, "fsync", real_fsync)
    got = json.loads(client.http.get(f"/api/v1/documents/{first['document_id']}",
                                     headers={"X-Api-Key": key}).body)
    assert got["version_count"] == 1
    data_dir = Path(os.environ["DOCPUB_DATA_DIR"])
    assert not [p for p in _files(data_dir / "blobs") if p.name.startswith(".tmp-")]


class _FullDatabase:
    """A connection whose statements that would grow the database fail as SQLite
    fails on a full disk (SQLITE_FULL), until `self.full` is cleared."""

    def __init__(self, conn, grows):
        self._conn, self._grows, self.full = conn, grows, True

    def execute(self, sql, *args):
        if self.full and sql.lstrip().upper().startswith(self._grows):
            exc = sqlite3.OperationalError("database or disk is full")
            exc.sqlite_errorname = "SQLITE_FULL"
            raise exc
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def test_sqlite_full_is_507_reads_and_deletes_still_work(client, workspace, monkeypatch):
    from chalicelib.adapters.sqlite.db import Database
    from chalicelib import wiring as registry

    _, key = workspace
    doc = json.loads(_publish(client, key, "<p>one</p>").body)
    db = registry.default_context().documents.db
    full = _FullDatabase(db.connection(), ("INSERT",))
    monkeypatch.setattr(Database, "connection", lambda self: full)
    data_dir = Path(os.environ["DOCPUB_DATA_DIR"])
    blobs_before = sorted(_files(data_dir / "blobs"))
    r = _publish(client, key, "<p>two</p>", doc["document_id"])
    assert r.status_code == 507, r.body
    assert sorted(_files(data_dir / "blobs")) == blobs_before  # its blob was removed again
    r = client.http.get(f"/api/v1/documents/{doc['document_id']}?include_html=true", headers={"X-Api-Key": key})
    assert r.status_code == 200 and json.loads(r.body)["html"] == "<p>one</p>"
    assert json.loads(r.body)["version_count"] == 1
    # The delete writes too (its activity line): it spends the disk reserve, which frees the space.
    real_release = db.reserve.release

    def release():
        full.full = False
        return real_release()

    monkeypatch.setattr(db.reserve, "release", release)
    assert client.http.delete(f"/api/v1/documents/{doc['document_id']}",
                              headers={"X-Api-Key": key}).status_code == 204


def test_a_delete_spends_the_reserve_when_even_it_cannot_write(client, workspace, monkeypatch):
    from chalicelib.adapters.sqlite.db import Database
    from chalicelib import wiring as registry

    _, key = workspace
    doc = json.loads(_publish(client, key, "<p>one</p>").body)
    db = registry.default_context().documents.db
    assert db.reserve.path.exists()
    full = _FullDatabase(db.connection(), ("UPDATE", "DELETE", "INSERT"))
    real_release = db.reserve.release

    def release():
        full.full = False  # the reserve's space is what the delete needed
        return real_release()

    monkeypatch.setattr(Database, "connection", lambda self: full)
    monkeypatch.setattr(db.reserve, "release", release)
    assert client.http.delete(f"/api/v1/documents/{doc['document_id']}",
                              headers={"X-Api-Key": key}).status_code == 204
    assert client.http.get(f"/api/v1/documents/{doc['document_id']}",
                           headers={"X-Api-Key": key}).status_code == 404
    assert db.reserve.path.exists()  # made again once there is room


def test_health_is_degraded_while_the_disk_is_full(client, monkeypatch):
    from chalicelib.adapters.sqlite import space

    assert client.http.get("/api/v1/health").status_code == 200
    monkeypatch.setattr(space, "free_bytes", lambda folder: 0)
    monkeypatch.setattr(space.Reserve, "ensure", lambda self: False)
    r = client.http.get("/api/v1/health")
    assert r.status_code == 503
    assert json.loads(r.body)["status"] == "degraded"


# ------------------------------------------------------------------ a real small filesystem

@pytest.fixture
def small_disk(tmp_path, monkeypatch):
    """DOCPUB_DATA_DIR on a 3 MiB tmpfs (needs root to mount; skipped otherwise)."""
    from chalicelib.adapters.sqlite import close_shared
    from chalicelib import wiring as registry

    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here: " + done.stderr.decode(errors="replace").strip())
    monkeypatch.setenv("DOCPUB_STORAGE", "sqlite")
    monkeypatch.setenv("DOCPUB_DATA_DIR", str(mount / "data"))
    monkeypatch.setenv("DOCPUB_DISK_RESERVE_BYTES", "262144")
    registry.reset()
    try:
        yield mount / "data"
    finally:
        registry.reset()
        close_shared()
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_really_full_disk(small_disk):
    from chalice.test import Client

    from app import app
    from chalicelib import wiring as registry

    _, created = registry.workspaces().create_workspace("Full", "pro")
    key = created.api_key
    with Client(app) as client:
        kept = json.loads(_publish(client, key, "<p>kept</p>").body)
        statuses, doc_ids = [], []
        for i in range(60):
            r = _publish(client, key, f"<p>{i}</p>" + "y" * 150_000)
            statuses.append(r.status_code)
            if r.status_code != 200:
                break
            doc_ids.append(json.loads(r.body)["document_id"])
        assert statuses[-1] == 507, statuses
        assert set(statuses[:-1]) == {200}
        health = client.http.get("/api/v1/health")
        assert health.status_code == 503 and json.loads(health.body)["status"] == "degraded"
        # Reads work.
        r = client.http.get(f"/api/v1/documents/{kept['document_id']}?include_html=true", headers={"X-Api-Key": key})
        assert r.status_code == 200 and json.loads(r.body)["html"] == "<p>kept</p>"
        assert client.http.get("/api/v1/documents", headers={"X-Api-Key": key}).status_code == 200
        # Deletes work, and free the space: writes work again, health recovers.
        for document_id in doc_ids[:4]:
            r = client.http.delete(f"/api/v1/documents/{document_id}", headers={"X-Api-Key": key})
            assert r.status_code == 204, r.body
        assert _publish(client, key, "<p>after</p>").status_code == 200
        assert client.http.get("/api/v1/health").status_code == 200
        # Nothing half-written: no temporary files, and every version's blob exists.
        assert not [p for p in _files(small_disk / "blobs") if p.name.startswith(".tmp-")]
        for document_id in doc_ids[4:]:
            r = client.http.get(f"/api/v1/documents/{document_id}?include_html=true", headers={"X-Api-Key": key})
            assert r.status_code == 200, r.body
