"""Dashboard: share link settings (enable, expiry) and a new link, on the document page."""
from __future__ import annotations

from datetime import datetime, timezone

from tests.http.test_dashboard import doc_id_from, upload
from tests.http.test_dashboard_sharing import cheap_argon2, owner, share_path  # noqa: F401  (fixtures)


def _minute(clock, seconds: int) -> str:
    return datetime.fromtimestamp(clock.now + seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M")


def test_disable_expire_and_replace_the_link_from_the_document_page(owner, client, clock):
    document_id = doc_id_from(upload(owner, b"<p>plans</p>", title="Plans"))
    page = owner.get(f"/dashboard/documents/{document_id}")
    assert "Share link" in page and "Make a new link" in page
    link = share_path(page.text)
    assert client.http.get(link).status_code == 200

    # Unchecked box: disabled.
    done = owner.post(f"/dashboard/documents/{document_id}/link", {"share_expires_at": ""}, csrf=owner.token())
    assert done.status == 303 and "m=link-saved" in done.location
    assert client.http.get(link).status_code == 404
    assert "link disabled" in owner.get(f"/dashboard/documents/{document_id}")

    # Enabled again, expiring in two hours (the form's minutes, UTC).
    expires = _minute(clock, 2 * 3600)
    done = owner.post(f"/dashboard/documents/{document_id}/link",
                      {"share_enabled": "on", "share_expires_at": expires}, csrf=owner.token())
    assert done.status == 303
    page = owner.get(f"/dashboard/documents/{document_id}")
    assert f"link expires {expires}:00Z" in page and f'value="{expires}"' in page.text
    assert client.http.get(link).status_code == 200
    clock.advance(2 * 3600)
    assert client.http.get(link).status_code == 410

    # Re-saving the form of an expired link keeps its (past) expiry: disabling still works.
    done = owner.post(f"/dashboard/documents/{document_id}/link", {"share_expires_at": expires}, csrf=owner.token())
    assert done.status == 303 and client.http.get(link).status_code == 404
    # A date in the past is refused with the field named; nothing changes.
    refused = owner.post(f"/dashboard/documents/{document_id}/link",
                         {"share_enabled": "on", "share_expires_at": _minute(clock, -3600)}, csrf=owner.token())
    assert refused.status == 422 and "share_expires_at" in refused.text

    # No expiry, then a new link: the old one is gone at once.
    owner.post(f"/dashboard/documents/{document_id}/link", {"share_enabled": "on"}, csrf=owner.token())
    assert client.http.get(link).status_code == 200
    done = owner.post(f"/dashboard/documents/{document_id}/link", {"action": "rotate"}, csrf=owner.token())
    assert done.status == 303 and "m=link-rotated" in done.location
    new_link = share_path(owner.get(f"/dashboard/documents/{document_id}").text)
    assert new_link != link
    assert client.http.get(link).status_code == 404 and client.http.get(new_link).status_code == 200


def test_link_forms_need_the_csrf_token(owner, client):
    document_id = doc_id_from(upload(owner, b"<p>plans</p>", title="Plans"))
    link = share_path(owner.get(f"/dashboard/documents/{document_id}").text)
    for fields in ({"action": "rotate"}, {"share_expires_at": ""}):
        refused = owner.post(f"/dashboard/documents/{document_id}/link", fields)
        assert refused.status == 403
    assert client.http.get(link).status_code == 200
