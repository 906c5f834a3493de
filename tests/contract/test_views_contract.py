"""The view-counter port, one contract on both adapters (DynamoDB via moto, SQLite)."""
from __future__ import annotations

from tests.contract.test_repository_contract import repos  # noqa: F401  (the two-adapter fixture)
from tests.helpers import run_together

DOC = "00000000-0000-4000-8000-000000000001"
OTHER = "00000000-0000-4000-8000-000000000002"


def test_counts_per_day_version_and_total(repos):  # noqa: F811
    views = repos.views
    views.add_view(DOC, "v_a", "2026-11-20", 1_000, 0)
    views.add_view(DOC, "v_a", "2026-11-21", 3_000, 5)
    views.add_view(DOC, "v_b", "2026-11-21", 2_000, 15)
    views.add_view(DOC, "v_b", "2026-11-22", 4_000, 5)
    views.add_view(OTHER, "v_x", "2026-11-22", 9_000, 0)
    counts = views.counts(DOC, "2026-11-21", "2026-11-22")
    assert counts.total == 4  # all time, whatever the window
    assert counts.versions == {"v_a": 2, "v_b": 2}
    assert counts.days == {"2026-11-21": 2, "2026-11-22": 1}  # 2026-11-20 is outside the window
    assert counts.last_viewed_ms == 4_000
    assert views.counts(DOC, "2026-11-20", "2026-11-20").days == {"2026-11-20": 1}
    empty = views.counts("00000000-0000-4000-8000-000000000009", "2026-01-01", "2026-12-31")
    assert (empty.total, empty.days, empty.versions, empty.last_viewed_ms) == (0, {}, {}, None)


def _views_on_two_documents(repos):
    """Four views of DOC (over two days and versions), one of OTHER; and a document never viewed."""
    views = repos.views
    views.add_view(DOC, "v_a", "2026-11-20", 1_000, 0)
    views.add_view(DOC, "v_b", "2026-11-21", 5_000, 7, count=3)
    views.add_view(OTHER, "v_x", "2026-11-22", 9_000, 15)
    return views, "00000000-0000-4000-8000-000000000009"


def test_totals_of_a_page_of_documents(repos):  # noqa: F811
    """A listing's views (contract: list items carry views_total and last_viewed_at)."""
    views, never = _views_on_two_documents(repos)
    assert views.totals([DOC, never, OTHER]) == {DOC: (4, 5_000), never: (0, None), OTHER: (1, 9_000)}
    assert views.totals([]) == {}


def test_counts_of_many_documents_equal_each_documents_counts(repos):  # noqa: F811
    """The dashboard's sparklines and most-viewed panel read every listed document at once."""
    views, never = _views_on_two_documents(repos)
    many = views.counts_many([DOC, never, OTHER], "2026-11-21", "2026-11-22")
    assert list(many) == [DOC, never, OTHER]
    for document_id, counts in many.items():
        assert counts == views.counts(document_id, "2026-11-21", "2026-11-22"), document_id
    assert many[DOC].days == {"2026-11-21": 3} and many[never].total == 0
    assert views.counts_many([], "2026-11-21", "2026-11-22") == {}


def test_fifty_concurrent_views_are_counted_exactly(repos):  # noqa: F811
    results, failures = run_together([
        (lambda i=i: repos.views.add_view(DOC, "v_a", "2026-11-22", 1_000 + i, i % 16)) for i in range(50)])
    assert failures == []
    counts = repos.views.counts(DOC, "2026-11-22", "2026-11-22")
    assert counts.total == 50 and counts.days == {"2026-11-22": 50} and counts.versions == {"v_a": 50}
    # Racing views: the last one stored may not be the latest-stamped one on DynamoDB
    # (SET per shard, no max): last_viewed is one of the views that finished last.
    assert 1_000 <= counts.last_viewed_ms <= 1_049


def test_admit_caps_each_scope_per_window(repos):  # noqa: F811
    views = repos.views
    assert [views.admit("doc#ip1", 7, 3, 100) for _ in range(5)] == [True, True, True, False, False]
    assert views.admit("doc#ip2", 7, 3, 100) is True  # another address
    assert views.admit("doc#ip1", 8, 3, 100) is True  # the next window


def test_concurrent_admits_never_exceed_the_limit(repos):  # noqa: F811
    results, failures = run_together([lambda: repos.views.admit("doc#ip", 1, 20, 100) for _ in range(50)])
    assert failures == []
    assert sorted(results) == [False] * 30 + [True] * 20


def test_delete_forgets_a_documents_counters(repos):  # noqa: F811
    repos.views.add_view(DOC, "v_a", "2026-11-22", 1_000, 3)
    repos.views.add_view(OTHER, "v_x", "2026-11-22", 1_000, 3)
    repos.views.delete_for_document(DOC)
    assert repos.views.counts(DOC, "2026-11-01", "2026-11-30").total == 0
    assert repos.views.counts(DOC, "2026-11-01", "2026-11-30").days == {}
    assert repos.views.counts(OTHER, "2026-11-01", "2026-11-30").total == 1


def test_a_database_of_the_previous_schema_gains_the_view_tables(tmp_path, monkeypatch):
    from chalicelib.adapters.sqlite import db as sqlite_db
    from chalicelib.adapters.sqlite.views import ViewCounterRepository

    path = tmp_path / "old.sqlite3"
    monkeypatch.setattr(sqlite_db, "SCHEMA_VERSION", len(sqlite_db.MIGRATIONS) - 1)  # before the views
    old = sqlite_db.Database(path)
    with old.write() as tx:
        tx.execute("INSERT INTO workspaces (id, name, plan, created_ms) VALUES ('ws_old', 'Old', 'free', 1)")
    old.close()
    monkeypatch.setattr(sqlite_db, "SCHEMA_VERSION", len(sqlite_db.MIGRATIONS))
    upgraded = sqlite_db.Database(path)
    assert upgraded.one("PRAGMA user_version")["user_version"] == len(sqlite_db.MIGRATIONS)
    assert upgraded.one("SELECT name FROM workspaces WHERE id = 'ws_old'") == {"name": "Old"}
    views = ViewCounterRepository(upgraded)
    views.add_view(DOC, "v_a", "2026-11-22", 5, 0)
    assert views.counts(DOC, "2026-11-22", "2026-11-22").total == 1
