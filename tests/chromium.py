"""Real Chromium for browser tests (Debian's /usr/bin/chromium via Playwright):
`from tests.chromium import browser` gives a test module one launched browser."""
from __future__ import annotations

import os

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian chromium is not installed at /usr/bin/chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


def mail_link_in(data_dir, email: str, kind: str) -> str:
    """The newest `kind` link mailed to `email` by the stack whose data folder is `data_dir`."""
    from tests.dashboard_client import mail_link

    return mail_link(email, kind, str(data_dir))


def confirm_sign_up(page, data_dir, email: str) -> None:
    """After the sign-up form: open the confirmation link from the outbox and press its button
    (signs in, lands on the API keys page)."""
    page.locator("text=Check your email").wait_for()
    page.goto(mail_link_in(data_dir, email, "verify"))
    page.click("button[type=submit] >> text=Confirm my email")
    page.wait_for_url("**/dashboard/keys**")


def sign_up(page, stack, email: str, workspace: str, password: str) -> None:
    """Sign up on the dashboard's form and confirm the email (signed in, on the API keys page)."""
    page.goto(stack.base_url + "/dashboard/sign-up")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", password)
    page.fill("input[name=workspace_name]", workspace)
    page.click("button[type=submit] >> text=Create workspace")
    confirm_sign_up(page, stack.data_dir, email)
