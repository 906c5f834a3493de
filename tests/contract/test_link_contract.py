"""Link lifecycle and pending CDN invalidations: the same meaning on DynamoDB (moto)
and on SQLite, plus the SQLite migration that adds them to an existing database."""
from __future__ import annotations

import dataclasses
import sqlite3

import pytest

from chalicelib.ports import StaleDocument
from chalicelib.ports.records import Version
from tests.contract.test_repository_contract import WS, create, make_workspace, new_doc, repos  # noqa: F401
from tests.helpers import run_together


def test_link_settings_round_trip(repos):
    make_workspace(repos)
    doc = create(repos, 1)
    stored = repos.documents.get(doc.document_id)
    assert stored.share_enabled is True and stored.share_expires_ms is None
    repos.documents.update_fields(stored, {"share_enabled": False, "share_expires_ms": 1_800_000_000_000})
    stored = repos.documents.get(doc.document_id)
    assert stored.share_enabled is False and stored.share_expires_ms == 1_800_000_000_000
    repos.documents.update_fields(stored, {"share_enabled": True, "share_expires_ms": None})
    stored = repos.documents.get(doc.document_id)
    assert stored.share_enabled is True and stored.share_expires_ms is None
    # A new version can carry link settings too.
    version = Version(version_id="v_1_2", number=2, note=None, created_ms=5000, size_bytes=3,
                      blob_key="documents/x/y/v_1_2.html")
    repos.documents.append_version(stored, version, {"title": "T2", "share_expires_ms": 1_900_000_000_000}, None, None)
    _, found, _, _ = repos.documents.get_for_share(doc.share_id)
    assert found.share_expires_ms == 1_900_000_000_000 and found.title == "T2"


def test_create_with_link_settings(repos):
    make_workspace(repos)
    doc, version = new_doc(7)
    doc = dataclasses.replace(doc, share_enabled=False, share_expires_ms=1_800_000_000_000)
    repos.documents.create(doc, version, 5, ("pro",), None, None)
    stored = repos.documents.get(doc.document_id)
    assert stored.share_enabled is False and stored.share_expires_ms == 1_800_000_000_000


def test_rotate_moves_the_link_atomically(repos):
    make_workspace(repos)
    doc = create(repos, 1)
    repos.documents.rotate_share(doc, "rotated0000000000000001")
    assert repos.documents.get_for_share(doc.share_id)[0] is None  # the old link: gone
    share, found, workspace, _ = repos.documents.get_for_share("rotated0000000000000001")
    assert share.document_id == doc.document_id and found.share_id == "rotated0000000000000001"
    assert workspace.workspace_id == WS
    # Rotating from a stale read changes nothing.
    with pytest.raises(StaleDocument):
        repos.documents.rotate_share(doc, "rotated0000000000000002")
    assert repos.documents.get_for_share("rotated0000000000000002")[0] is None
    assert repos.documents.get(doc.document_id).share_id == "rotated0000000000000001"


def test_racing_rotations_from_one_read_let_exactly_one_through(repos):
    make_workspace(repos)
    doc = create(repos, 1)
    results, failures = run_together([
        lambda n=n: repos.documents.rotate_share(doc, f"racer{n:018d}") for n in range(6)])
    assert len(results) == 1 and failures == ["StaleDocument"] * 5
    current = repos.documents.get(doc.document_id).share_id
    live = [n for n in range(6) if repos.documents.get_for_share(f"racer{n:018d}")[0] is not None]
    assert [f"racer{n:018d}" for n in live] == [current]


def test_rotate_of_a_deleting_document_is_refused(repos):
    make_workspace(repos)
    doc = create(repos, 1)
    repos.documents.begin_delete(doc)
    with pytest.raises(StaleDocument):
        repos.documents.rotate_share(doc, "rotated0000000000000009")
    assert repos.documents.get_for_share("rotated0000000000000009")[0] is None


def test_pending_invalidations(repos):
    from chalicelib.ports.records import PendingInvalidation

    pending = repos.cdn_pending
    assert pending.list(15) == []
    pending.add("/d/bbb*", "rotate", 2000, "E1")
    pending.add("/d/aaa*", "delete", 1000, "E0")
    pending.add("/d/bbb*", "rotate", 3000, "E2")  # again: one row, attempts counted, first time kept
    listed = pending.list(15)
    assert listed == [PendingInvalidation("/d/aaa*", "delete", 1000, 1, 1000, "E0"),
                      PendingInvalidation("/d/bbb*", "rotate", 2000, 2, 3000, "E2")]
    assert all(type(p) is PendingInvalidation for p in listed)
    assert [p.path for p in pending.list(1)] == ["/d/aaa*"]
    pending.remove("/d/aaa*")
    pending.remove("/d/never*")  # not pending: no error
    assert [p.path for p in pending.list(15)] == ["/d/bbb*"]


def test_sqlite_migration_adds_link_columns_to_an_existing_database(tmp_path):
    """A database at schema 1 (before links) opens at schema 2 with its documents' links
    enabled and without expiry."""
    from chalicelib.adapters.sqlite import db as sqlite_db
    from chalicelib.adapters.sqlite import repositories

    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "docpub.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in sqlite_db._statements(sqlite_db.MIGRATIONS[0]):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO workspaces (id, name, plan, created_ms, document_count) VALUES ('ws', 'W', 'free', 1, 1)")
    conn.execute("INSERT INTO documents (document_id, workspace_id, title, share_id, created_ms, updated_ms, "
                 "version_count, latest_version_id, latest_size) VALUES ('d1', 'ws', 'Old', 's1', 1, 1, 1, 'v', 1)")
    conn.close()
    repos = repositories(folder, shared=False)
    doc = repos.documents.get("d1")
    assert doc.title == "Old" and doc.share_enabled is True and doc.share_expires_ms is None
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == len(sqlite_db.MIGRATIONS) >= 2
    repos.cdn_pending.add("/d/s1*", "delete", 1, "E")
    assert len(repos.cdn_pending.list(5)) == 1
