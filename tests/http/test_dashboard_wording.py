"""Issue 37, items 4 and 5: what a new user reads. The landing page and the dashboard's
button name Markdown and folders (they said HTML only); a form error whose summary already
says the field's reason shows it once (a weak password read "password: is too easy to
guess" twice); the header carries the whole email in a title (it is cut with an ellipsis)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.dashboard_client import DashboardClient

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def cheap_argon2(fast_argon2):
    """Hash passwords cheaply."""


def test_the_landing_page_names_markdown_and_folders(client):
    page = client.http.get("/", headers={"Accept": "text/html"}).body.decode()
    assert "<h1>Publish HTML, Markdown or a folder. Get a link.</h1>" in page


def test_the_upload_button_is_upload_and_the_header_names_the_whole_email(client, app_clock):
    dash = DashboardClient(client)
    dash.sign_up(email="someone.with.a.long.address@example.com")
    page = dash.get("/dashboard/documents")
    assert "Upload HTML" not in page and ">Upload</a>" in page
    assert 'class="who" title="someone.with.a.long.address@example.com (owner)"' in page


def test_a_weak_password_is_refused_with_its_reason_once(client, app_clock):
    dash = DashboardClient(client)
    page = dash.submit("/dashboard/sign-up", "/dashboard/sign-up",
                       {"email": "weak@example.com", "password": "password123", "workspace_name": "Weak"})
    assert page.text.count("is too easy to guess") == 1, page.text[page.text.index('class="error"'):][:600]


def test_the_action_says_folders_work():
    folder = yaml.safe_load((PROJECT_DIR / "action.yml").read_text())["inputs"]["folder"]["description"]
    assert "when the client supports" not in folder
    assert "when the client supports" not in (PROJECT_DIR / "docs" / "ci.md").read_text()
