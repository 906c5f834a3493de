"""Issue 24: a stranger cannot lock a document's viewers out.

Finding: anyone could spend a document's failed-unlock budget, locking out its
viewers, and the lock survived rotating the link and changing the passphrase."""
from __future__ import annotations

import re

import pytest

from tests.sharing_helpers import cookie_of, unlock
from tests.http.test_hardening import owner  # noqa: F401  (fixture)

# argon2 with cheap parameters (tests/conftest.py fast_argon2): every unlock and sign-in here
# verifies a hash (0.25-0.4 s each with the production ones);
# test_passphrase.py::test_passwords_and_passphrases_hash_with_production_parameters_by_default
# holds the production parameters.
pytestmark = pytest.mark.usefixtures("fast_argon2")


@pytest.fixture
def locked(client, owner, monkeypatch):  # noqa: F811
    """A Pro document whose failed-unlock budget (5) strangers have spent; a viewer
    who unlocked before keeps the cookie."""
    from tests.http.test_dashboard import doc_id_from, set_plan, upload, workspace_id_of

    monkeypatch.setenv("DOCPUB_UNLOCK_FAILURE_BUDGET", "5")
    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    set_plan(workspace_id_of(owner), "pro")
    document_id = doc_id_from(upload(owner, b"<p>secret plans</p>", title="Plans"))
    assert owner.post(f"/dashboard/documents/{document_id}/passphrase",
                      {"action": "set", "passphrase": "violet otter 42"}, csrf=owner.token()).status == 303
    share = _share_of(owner, document_id)
    viewer = unlock(client, share, "violet otter 42", _address(1000))
    assert viewer.status_code == 303
    for i in range(5):
        assert unlock(client, share, f"wrong guess {i}", _address(i)).status_code == 401
    assert unlock(client, share, "violet otter 42", _address(99)).status_code == 429
    return {"document_id": document_id, "share": share, "cookie": cookie_of(viewer)}


def _address(i):
    return {"CloudFront-Viewer-Address": f"2001:db8:{i:x}::1:443"}


def _share_of(owner, document_id):  # noqa: F811
    return re.search(r"/d/([A-Za-z0-9_-]{16,64})", owner.get(f"/dashboard/documents/{document_id}").text).group(1)


def test_a_viewer_holding_a_valid_cookie_is_never_refused(client, locked):
    again = unlock(client, locked["share"], "anything", {**_address(7), "Cookie": locked["cookie"]})
    assert again.status_code == 303  # renewed, not 429
    page = client.http.get(f"/d/{locked['share']}", headers={"Cookie": locked["cookie"]})
    assert page.status_code == 200 and "secret plans" not in page.body.decode()  # the wrapper frames it
    assert "This document is protected" not in page.body.decode()


def test_rotating_the_link_resets_the_budget(client, owner, locked):  # noqa: F811
    assert owner.post(f"/dashboard/documents/{locked['document_id']}/link", {"action": "rotate"},
                      csrf=owner.token()).status == 303
    share = _share_of(owner, locked["document_id"])
    assert share != locked["share"]
    assert unlock(client, share, "violet otter 42", _address(99)).status_code == 303


def test_a_new_passphrase_resets_the_budget(client, owner, locked):  # noqa: F811
    assert owner.post(f"/dashboard/documents/{locked['document_id']}/passphrase",
                      {"action": "set", "passphrase": "amber walrus 77"}, csrf=owner.token()).status == 303
    assert unlock(client, locked["share"], "amber walrus 77", _address(99)).status_code == 303


def test_the_dashboard_says_why_unlocking_is_paused_and_how_to_end_it(owner, locked):  # noqa: F811
    page = owner.get(f"/dashboard/documents/{locked['document_id']}").text
    assert "paused for everyone who has not unlocked yet" in page
    assert "rotating the link ends the pause" in page
