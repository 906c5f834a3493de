"""A write that loses every race says which race it lost.

Racing writes through one API key contend for the key's write-limit slot, not
for the document: bench/embedded.py --shared-key saw 4 in 2,000 publishes end as
409 "The document kept changing", naming a document nobody changed. The storage
port below always loses the key-slot race (a stand-in for that contention), so
the service exhausts its attempts deterministically."""
from __future__ import annotations

import dataclasses

import pytest

from chalicelib.errors import RateLimited, VersionConflict
from chalicelib.models import EditRequest, PublishRequest
from chalicelib.ports import GuardFailed, StaleDocument
from chalicelib.services import auth
from chalicelib.services.context import Context
from chalicelib.services.documents import DocumentService
from chalicelib.services.workspaces import WorkspaceService


class AlwaysLoses:
    """The real document repository, except that appending a version always loses `race`."""

    def __init__(self, real, race: str):
        self.real, self.race = real, race

    def append_version(self, doc, *args, **kwargs):
        if self.race == "key":
            raise GuardFailed("rate")
        raise StaleDocument(doc)

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.fixture
def setup(ctx):
    ws, key = WorkspaceService(ctx).create_workspace("Acme", "free")
    who = auth.credentials_from_key(key.api_key)
    published = DocumentService(ctx).publish(who, PublishRequest(title="T", html="<p>a</p>")).response

    def service(race: str) -> DocumentService:
        repos = dataclasses.replace(ctx.repos, documents=AlwaysLoses(ctx.repos.documents, race))
        return DocumentService(Context(repos=repos, clock=ctx.clock, sleep=lambda _s: None))

    return who, published.document_id, service


def test_a_publish_that_always_loses_the_key_slot_is_busy_not_a_conflict(setup):
    who, document_id, service = setup
    with pytest.raises(RateLimited) as caught:
        service("key").publish(who, PublishRequest(title="T", html="<p>b</p>", document_id=document_id))
    assert caught.value.status == 429 and caught.value.headers["Retry-After"] == "1"
    assert "simultaneous writes with this API key" in caught.value.message


def test_an_edit_that_always_loses_the_key_slot_is_busy_not_a_conflict(setup):
    who, document_id, service = setup
    edit = EditRequest(edits=[{"old_string": "a", "new_string": "b"}])
    with pytest.raises(RateLimited):
        service("key").edit(who, document_id, edit)


def test_a_document_that_always_changes_is_still_a_version_conflict(setup):
    who, document_id, service = setup
    with pytest.raises(VersionConflict) as caught:
        service("document").publish(who, PublishRequest(title="T", html="<p>b</p>", document_id=document_id))
    assert "kept changing" in caught.value.message


def test_a_markdown_edit_retried_while_the_key_is_busy_renders_its_page_once(setup, monkeypatch):
    """A retry for the key's slot edits the same version: the page rendered for the first
    attempt is reused (it was rendered again on each of up to 50 attempts, up to seconds each)."""
    from chalicelib.services import content

    who, _document_id, service = setup
    markdown_doc = service("none").publish(who, PublishRequest(title="M", html="# a\n\ntext a",
                                                                format="markdown")).response
    renders = []
    real = content.render_markdown
    monkeypatch.setattr(content, "render_markdown", lambda *a, **k: renders.append(1) or real(*a, **k))
    with pytest.raises(RateLimited):
        service("key").edit(who, markdown_doc.document_id,
                            EditRequest(edits=[{"old_string": "text a", "new_string": "text b"}]))
    assert len(renders) == 1
