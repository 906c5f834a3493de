"""Issue 29, item 7, over HTTP (chalice.test.Client): a free workspace at 1 of 1 keys is
not offered a "create key" form it cannot use; the way to Pro says what this person can
do (a billing link, the operator command only for operators, else ask the administrator);
charts with no data say so instead of drawing empty boxes."""
from __future__ import annotations

import re

import pytest

from tests.dashboard_client import DashboardClient
from tests.http.test_dashboard import create_key, set_plan, workspace_id_of
from tests.http.test_views_dashboard import publish, text_of, view

CREATE_FORM = 'action="/dashboard/keys" class="search"'


@pytest.fixture(autouse=True)
def cheap_argon2(fast_argon2):
    """Hash passwords cheaply."""


@pytest.fixture(autouse=True)
def no_upgrade_settings(monkeypatch):
    monkeypatch.delenv("DOCPUB_UPGRADE_URL", raising=False)
    monkeypatch.delenv("DOCPUB_OPERATOR_EMAILS", raising=False)


@pytest.fixture
def owner(client, app_clock):
    dash = DashboardClient(client)
    dash.sign_up(email="kim@example.com")
    return dash


def test_a_free_workspace_at_its_key_cap_gets_no_create_form_until_a_key_is_revoked(owner):
    page = owner.get("/dashboard/keys")
    assert CREATE_FORM in page.text and 'id="key-limit"' not in page.text
    create_key(owner)
    page = owner.get("/dashboard/keys")
    assert CREATE_FORM not in page.text, "the free plan's one key is in use: the form would only fail"
    limit = page.text.split('id="key-limit"', 1)[1].split("</section>", 1)[0]
    assert "All 1 key of the Free plan in use" in text_of(limit)
    assert "revoke the one below" in text_of(limit) and "ask your administrator" in text_of(limit)
    key_id = re.search(r"/dashboard/keys/(key_[0-9a-f]+)/revoke", page.text).group(1)
    owner.post(f"/dashboard/keys/{key_id}/revoke", {}, csrf=owner.token())
    assert CREATE_FORM in owner.get("/dashboard/keys").text
    set_plan(workspace_id_of(owner), "pro")
    create_key(owner, "second")
    assert CREATE_FORM in owner.get("/dashboard/keys").text  # Pro: no cap


@pytest.mark.parametrize("path", ["/dashboard/workspace", "/dashboard/keys"])
def test_people_who_do_not_run_the_service_are_told_to_ask_their_administrator(owner, path):
    create_key(owner)
    page = owner.get(path)
    ws = workspace_id_of(owner)
    assert f"ask your administrator to move workspace {ws} to Pro" in text_of(page.text)
    assert "set-plan" not in page.text and "make admin" not in page.text and "Upgrade to Pro" not in page.text


@pytest.mark.parametrize("operators", ["kim@example.com", "ops@example.com, KIM@example.com", "*"])
def test_operators_see_the_command_for_this_workspace(owner, monkeypatch, operators):
    monkeypatch.setenv("DOCPUB_OPERATOR_EMAILS", operators)
    page = owner.get("/dashboard/workspace")
    ws = workspace_id_of(owner)
    assert f'make -s admin ARGS="set-plan {ws} pro"' in text_of(page.text)
    assert "ask your administrator" not in page.text


def test_someone_else_is_not_an_operator(owner, monkeypatch):
    monkeypatch.setenv("DOCPUB_OPERATOR_EMAILS", "ops@example.com")
    page = owner.get("/dashboard/workspace")
    assert "set-plan" not in page.text and "ask your administrator" in page.text


def test_a_billing_link_when_the_service_has_one(owner, monkeypatch):
    monkeypatch.setenv("DOCPUB_UPGRADE_URL", "https://billing.example.com/upgrade?workspace={workspace_id}")
    ws = workspace_id_of(owner)
    for path in ("/dashboard/workspace", "/dashboard/keys"):
        if path == "/dashboard/keys":
            create_key(owner)
        page = owner.get(path)
        assert f'<a class="button" href="https://billing.example.com/upgrade?workspace={ws}">Upgrade to Pro</a>' \
            in page.text, path
        assert "ask your administrator" not in page.text and "set-plan" not in page.text


def test_a_billing_link_that_is_not_a_web_address_is_ignored(owner, monkeypatch):
    monkeypatch.setenv("DOCPUB_UPGRADE_URL", "javascript:alert(1)")
    page = owner.get("/dashboard/workspace")
    assert "javascript:" not in page.text and "ask your administrator" in page.text


def test_the_edit_page_on_free_carries_the_same_upgrade_path(owner, client, monkeypatch):
    key = create_key(owner)
    doc = publish(client, key, "Notes")
    monkeypatch.setenv("DOCPUB_OPERATOR_EMAILS", "kim@example.com")
    page = owner.get(f"/dashboard/documents/{doc['document_id']}/edit")
    assert "Editing in the dashboard is a Pro feature" in page.text
    assert f'set-plan {workspace_id_of(owner)} pro' in page.text


def test_charts_without_views_say_no_views_yet(owner, client, app_clock):
    key = create_key(owner)
    quiet = publish(client, key, "Quiet")
    page = owner.get(f"/dashboard/documents/{quiet['document_id']}")
    views = page.text.split('id="views"', 1)[1].split("</section>", 1)[0]
    assert "No views yet." in text_of(views)
    assert "<svg" not in views and '<rect class="bar"' not in views
    listing = owner.get("/dashboard/documents").text
    assert '<span class="muted">no views</span>' in listing and '<svg class="sparkline"' not in listing

    view(client, quiet["share_id"], times=2)
    page = owner.get(f"/dashboard/documents/{quiet['document_id']}")
    views = page.text.split('id="views"', 1)[1].split("</section>", 1)[0]
    assert "No views yet" not in views and '<svg class="chart" id="views-days"' in views
    app_clock.advance(40 * 24 * 3600)  # the views are older than the 30-day chart
    owner.sign_in(email="kim@example.com")  # the session has expired meanwhile
    page = owner.get(f"/dashboard/documents/{quiet['document_id']}")
    views = page.text.split('id="views"', 1)[1].split("</section>", 1)[0]
    assert "No views in the last 30 days." in text_of(views) and 'id="views-days"' not in views
    assert 'id="views-versions"' in views  # all time: still drawn


def test_api_and_mcp_plan_refusals_give_the_same_upgrade_path(client, key, monkeypatch):
    """The previous session left REST and MCP refusals saying "upgrade to Pro" with no way
    to do it: they now give the billing link when the service has one (also as
    `details.upgrade_url`), else say to ask the administrator, as the dashboard does."""
    import json

    from tests.helpers import post_json
    from tests.http.test_mcp import call as call_tool

    for n in range(5):
        assert post_json(client, "/api/v1/publish", {"title": f"D{n}", "html": "<p>x</p>"}, key).status_code == 200
    refused = json.loads(post_json(client, "/api/v1/publish", {"title": "sixth", "html": "<p>x</p>"}, key).body)
    assert refused["error"]["code"] == "plan_limit_reached"
    assert "ask the workspace's administrator to upgrade it to Pro" in refused["error"]["message"]
    assert "upgrade_url" not in refused["error"]["details"]

    monkeypatch.setenv("DOCPUB_UPGRADE_URL", "https://billing.example.com/upgrade?workspace={workspace_id}")
    refused = json.loads(post_json(client, "/api/v1/publish", {"title": "sixth", "html": "<p>x</p>"}, key).body)
    link = refused["error"]["details"]["upgrade_url"]
    assert link.startswith("https://billing.example.com/upgrade?workspace=ws_") and link in refused["error"]["message"]
    tool = call_tool(client, key, "publish_document", {"title": "sixth", "html": "<p>x</p>"})
    assert tool["isError"] and link in tool["content"][0]["text"]
