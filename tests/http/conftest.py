"""Fixtures of the HTTP level (chalice.test.Client): shared by the dashboard tests."""
from __future__ import annotations

import pytest

from tests.dashboard_client import DashboardClient


@pytest.fixture
def owner(client, app_clock):
    """A person signed up (workspace owner) in the dashboard; a module that needs a
    particular email or workspace name defines its own."""
    dash = DashboardClient(client)
    dash.sign_up()
    return dash


@pytest.fixture
def signed_in_owner(client, app_clock, fast_argon2):
    """(a DashboardClient signed in as owner@example.com of "Acme", an API key of that workspace)."""
    import re

    from tests.dashboard_client import DashboardClient

    dash = DashboardClient(client)
    dash.sign_up(email="owner@example.com", workspace="Acme")
    page = dash.post("/dashboard/keys", {"name": "ci"}, csrf=dash.token())
    return dash, re.search(r"dpk_[A-Za-z0-9_-]{32,}", page.text).group(0)
