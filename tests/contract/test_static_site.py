"""Static copies of public share links (issue 38) on both stores: the port itself
(S3 under `static/`, files under the data folder), then what services/static_pages.py
keeps there: a public link's page, content and beacon object, and nothing at all for a
link that is withdrawn in any way (the test the issue asks for: no stale object stays
readable at the origin). On moto here; on the S3 emulator under `make test-aws`."""
from __future__ import annotations

import pytest

from chalicelib.models import PublishRequest, UpdateDocumentRequest
from chalicelib.ports.static import StaticObject
from chalicelib.services.auth import credentials_from_key

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)


@pytest.fixture
def site(storage, monkeypatch):
    from chalicelib.wiring import build_static

    monkeypatch.setenv("DOCPUB_STATIC_PAGES", "on")
    store, render = build_static()
    assert store.enabled and render is not None
    return store


@pytest.fixture
def world(storage, clock, monkeypatch):
    """A context that writes static copies, a Pro workspace and its credentials."""
    from chalicelib.wiring import new_context
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.sharing import ShareService
    from chalicelib.services.workspaces import WorkspaceService

    monkeypatch.setenv("DOCPUB_STATIC_PAGES", "on")
    ctx = new_context(clock=clock)
    ws, key = WorkspaceService(ctx).create_workspace("Acme", "pro")
    return ctx, ws, credentials_from_key(key.api_key), DocumentService(ctx), ShareService(ctx)


def _publish(world, html="<h1>Hello static</h1>", **fields):
    ctx, _ws, who, documents, _sharing = world
    done = documents.publish(who, PublishRequest(title=fields.pop("title", "Static"), html=html, **fields)).response
    return ctx.documents.get(done.document_id)


def _paths(ctx, doc):
    return ["/d/" + doc.share_id, f"/d/{doc.share_id}/v/{doc.latest_version_id}", f"/d/{doc.share_id}/seen"]


def _readable(ctx, share_id, paths):
    return [p for p in paths if ctx.static.get("main", p) is not None or ctx.static.get("content", p) is not None]


# ------------------------------------------------------------------ the port

@BOTH
def test_objects_are_written_read_replaced_and_removed_per_link(site):
    page = StaticObject("/d/abcdefghijklmnop", b"<p>one</p>", "text/html; charset=utf-8", "public, max-age=0")
    content = StaticObject("/d/abcdefghijklmnop/v/v_1", b"<p>c</p>", "text/html; charset=utf-8", "public")
    other = StaticObject("/d/abcdefghijklmnoq", b"other", "text/plain", "public")
    for obj in (page, content, other):
        site.put("main", obj)
    assert site.get("main", page.path) == page
    assert site.get("content", page.path) is None  # sites are apart
    site.put("main", StaticObject(page.path, b"<p>two</p>", page.content_type, page.cache_control))
    assert site.get("main", page.path).body == b"<p>two</p>"
    assert site.delete_link("main", "abcdefghijklmnop") == 2
    assert site.get("main", page.path) is None and site.get("main", content.path) is None
    assert site.get("main", other.path) == other  # another link (one letter apart) untouched
    assert site.delete_link("main", "abcdefghijklmnop") == 0  # nothing left: no error


@BOTH
def test_only_share_paths_are_accepted(site):
    with pytest.raises(ValueError):
        site.put("main", StaticObject("/api/v1/me", b"", "text/plain", "public"))
    with pytest.raises(ValueError):
        site.get("main", "/d/../../secret")
    with pytest.raises(ValueError):
        site.put("elsewhere", StaticObject("/d/abcdefghijklmnop", b"", "text/plain", "public"))


# ------------------------------------------------------------------ the service

@BOTH
def test_a_public_link_is_written_as_anyone_sees_it(world):
    ctx = world[0]
    doc = _publish(world)
    page = ctx.static.get("main", "/d/" + doc.share_id)
    html = page.body.decode()
    assert "<title>Static</title>" in html and page.cache_control == "public, max-age=0, s-maxage=60"
    assert '<meta http-equiv="Content-Security-Policy"' in html and "frame-ancestors" not in html
    assert f'data-view="/d/{doc.share_id}/seen?v=1" data-view-method="get"' in html
    # The "Verified" line is inline (no /verified request per view, which reaches the function on a miss).
    assert '<div id="pv" data-src=""><details' in html
    content = ctx.static.get("main", f"/d/{doc.share_id}/v/{doc.latest_version_id}")
    assert content.body.startswith(b"<h1>Hello static</h1>") and b"<script>" in content.body
    beacon = ctx.static.get("main", f"/d/{doc.share_id}/seen")
    assert beacon.body == b"" and "s-maxage=86400" in beacon.cache_control


@BOTH
def test_a_new_version_replaces_the_page(world):
    ctx, _ws, who, documents, _ = world
    doc = _publish(world)
    documents.publish(who, PublishRequest(title="Static two", html="<p>two</p>", document_id=doc.document_id))
    doc = ctx.documents.get(doc.document_id)
    html = ctx.static.get("main", "/d/" + doc.share_id).body.decode()
    assert "Static two" in html and "Version 2 of 2" in html and "seen?v=2" in html
    assert ctx.static.get("main", f"/d/{doc.share_id}/v/{doc.latest_version_id}").body.startswith(b"<p>two</p>")


def _disable(world, doc):
    world[3].update(world[2], doc.document_id, UpdateDocumentRequest(share_enabled=False))


def _members_only(world, doc):
    world[3].update(world[2], doc.document_id, UpdateDocumentRequest(share_access="workspace"))


def _expiry(world, doc):
    from chalicelib.services.context import rfc3339

    in_a_month = rfc3339(world[0].now_ms() + 30 * 24 * 3600 * 1000)  # far beyond the 60 s edge bound
    world[3].update(world[2], doc.document_id, UpdateDocumentRequest(share_expires_at=in_a_month))


def _passphrase(world, doc):
    world[4].set_passphrase(world[2], doc.document_id, "correct horse battery staple")


def _delete(world, doc):
    world[3].delete(world[2], doc.document_id)


def _rotate(world, doc):
    world[4].rotate(world[2], doc.document_id)


WITHDRAWALS = [_disable, _members_only, _expiry, _passphrase, _delete, _rotate]


@BOTH
@pytest.mark.parametrize("withdraw", WITHDRAWALS, ids=lambda f: f.__name__.strip("_"))
def test_no_object_of_a_withdrawn_link_stays_readable(world, withdraw, clock):
    """Found in the issue: a static copy must not outlive a withdrawal at the origin."""
    ctx = world[0]
    doc = _publish(world)
    paths = _paths(ctx, doc)
    assert _readable(ctx, doc.share_id, paths) == paths
    clock.advance(1)
    withdraw(world, doc)
    assert _readable(ctx, doc.share_id, paths) == []
    if withdraw is _rotate:  # the new link is public: written under its own id
        rotated = ctx.documents.get(doc.document_id)
        assert ctx.static.get("main", "/d/" + rotated.share_id) is not None


@BOTH
def test_a_link_made_public_again_is_written_again(world):
    ctx, _ws, who, documents, sharing = world
    doc = _publish(world)
    sharing.set_passphrase(who, doc.document_id, "correct horse battery staple")
    assert ctx.static.get("main", "/d/" + doc.share_id) is None
    sharing.clear_passphrase(who, doc.document_id)
    assert ctx.static.get("main", "/d/" + doc.share_id) is not None


@BOTH
def test_branding_rewrites_every_public_page(world):
    from chalicelib.services.workspaces import WorkspaceService

    ctx, ws = world[0], world[1]
    doc = _publish(world)
    WorkspaceService(ctx).set_branding(ws.id, "Acme Research", "Findings, weekly")
    assert "Acme Research" in ctx.static.get("main", "/d/" + doc.share_id).body.decode()


@BOTH
def test_a_withdrawal_that_lands_while_writing_leaves_nothing(world, monkeypatch):
    """The race: a disable commits after sync read the link public and before it wrote;
    the second read sees it and removes what was just written."""
    ctx = world[0]
    doc = _publish(world)
    real_put = ctx.static.put
    raced = []

    def put_then_disable(site, obj):
        real_put(site, obj)
        if not raced:
            raced.append(True)
            ctx.documents.update_fields(ctx.documents.get(doc.document_id), {"share_enabled": False})

    monkeypatch.setattr(ctx.static, "put", put_then_disable)
    from chalicelib.services import static_pages

    static_pages.sync(ctx, doc.share_id, "test")
    assert _readable(ctx, doc.share_id, _paths(ctx, doc)) == []


@BOTH
def test_a_failed_sync_is_kept_and_retried(world, monkeypatch):
    from chalicelib.services import cdn, static_pages

    ctx = world[0]
    doc = _publish(world)

    def broken(site, obj):
        raise OSError("storage down")

    real_put = ctx.static.put
    monkeypatch.setattr(ctx.static, "put", broken)
    static_pages.sync(ctx, doc.share_id, "new version")
    assert ctx.static.get("main", "/d/" + doc.share_id) is None  # removed rather than stale
    assert [p.path for p in cdn.pending(ctx)] == ["static:" + doc.share_id]
    monkeypatch.setattr(ctx.static, "put", real_put)
    assert cdn.retry_pending(ctx)["static_synced"] == 1
    assert ctx.static.get("main", "/d/" + doc.share_id) is not None and cdn.pending(ctx) == []


@BOTH
def test_nothing_is_written_when_static_pages_are_off(storage, clock, monkeypatch):
    from chalicelib.wiring import new_context

    monkeypatch.delenv("DOCPUB_STATIC_PAGES", raising=False)
    ctx = new_context(clock=clock)
    assert not ctx.static.enabled


@BOTH
def test_a_bundles_files_are_static_too_and_go_with_the_link(world):
    """A bundle's page asks for its files beside it: they are written with the page, so a
    viral bundle's misses reach S3 too, and a withdrawal removes them with the rest."""
    ctx = world[0]
    files = [{"path": "style.css", "content": "body { color: #123456 }"},
             {"path": "data/notes.txt", "content": "plain text"}]
    doc = _publish(world, html="<link rel=stylesheet href=style.css><p>bundle</p>", files=files)
    version = f"/d/{doc.share_id}/v/{doc.latest_version_id}"
    assert ctx.static.get("main", version + "/index.html").body.startswith(b"<link rel=stylesheet")
    css = ctx.static.get("main", version + "/style.css")
    assert css.body == b"body { color: #123456 }" and css.content_type.startswith("text/css")
    assert ctx.static.get("main", version + "/data/notes.txt").body == b"plain text"
    _disable(world, doc)
    assert _readable(ctx, doc.share_id, [version + "/index.html", version + "/style.css",
                                         version + "/data/notes.txt", "/d/" + doc.share_id]) == []


@BOTH
def test_links_published_before_static_pages_are_written_by_the_backfill(storage, clock, monkeypatch):
    """A stack deployed with issue 38 has public links with no static copy: the maintenance
    function's `static-sync` (and `make admin ARGS=static-sync`) writes them, and only them."""
    from chalicelib.entrypoints import maintenance
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.workspaces import WorkspaceService
    from chalicelib.wiring import new_context

    monkeypatch.delenv("DOCPUB_STATIC_PAGES", raising=False)
    before = new_context(clock=clock)
    _, key = WorkspaceService(before).create_workspace("Old", "pro")
    who = credentials_from_key(key.api_key)
    documents = DocumentService(before)
    public = documents.publish(who, PublishRequest(title="Old", html="<p>old</p>")).response
    off = documents.publish(who, PublishRequest(title="Off", html="<p>off</p>")).response
    documents.update(who, off.document_id, UpdateDocumentRequest(share_enabled=False))
    monkeypatch.setenv("DOCPUB_STATIC_PAGES", "on")
    from chalicelib import wiring

    wiring.reset()
    after = new_context(clock=clock)
    monkeypatch.setattr(wiring, "default_context", lambda: after)
    assert maintenance.handle({"docpub": "static-sync"}, None) == {"workspaces": 1, "links": 1}
    share = after.documents.get(public.document_id).share_id
    assert after.static.get("main", "/d/" + share) is not None
    assert after.static.get("main", "/d/" + after.documents.get(off.document_id).share_id) is None
