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
