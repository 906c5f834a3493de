"""Single sign-on in real Chromium (contract 7f): the real local stack configured for a
real OpenID provider (the certified `oidc-provider` on Node, tests/oidc.py). An owner
signs in through the provider's own login form, lets people of @example.com join as
editors from the workspace page; then another person signs in the same way and is an
editor of that workspace, without any invitation."""
from __future__ import annotations

import pytest

from tests.axe import violations
from tests.chromium import browser  # noqa: F401 - the fixture
from tests.oidc import Provider
from tests.stack import LocalStack

pytestmark = [pytest.mark.browser, pytest.mark.e2e]


@pytest.fixture(scope="module")
def sso_stack(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sso")
    stack = LocalStack(folder / "data")
    provider = Provider(stack.base_url + "/dashboard/sso/callback", folder)
    stack.extra_env.update(provider.env())
    try:
        stack.start()
        yield stack
    finally:
        stack.stop()
        provider.stop()


def sign_in_with_sso(browser, stack, login: str):  # noqa: F811 - the fixture's value
    """A new browser context signed in as `login` through the provider: (context, page)."""
    context = browser.new_context()
    context.set_default_timeout(20_000)
    page = context.new_page()
    page.goto(stack.base_url + "/dashboard/sign-in")
    assert violations(page) == []  # WCAG 2.1 AA with the SSO button
    page.click("text=Sign in with Example ID")
    # The provider's own login form (its development form: a login, any password).
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any password")
    page.click("button[type=submit]")
    page.wait_for_url(stack.base_url + "/dashboard/**")
    assert page.locator(".who").inner_text().startswith(f"{login}@example.com")
    return context, page


def test_a_person_signs_in_with_sso_and_joins_as_the_configured_role(sso_stack, browser):  # noqa: F811
    owner, page = sign_in_with_sso(browser, sso_stack, "owner")
    page.goto(sso_stack.base_url + "/dashboard/workspace")
    section = page.locator("#sso")
    section.locator("text=You signed in with Example ID as an address at").wait_for()
    assert violations(page) == []
    assert section.locator("input[name=domain]").input_value() == "@example.com"  # offered: the domain signed in at
    section.locator("select[name=role]").select_option("editor")
    section.locator("button[type=submit] >> text=Save single sign-on").click()
    page.locator("text=Single sign-on settings saved.").wait_for()
    page.locator("#sso p", has_text="Now: people at @example.com join as editor").wait_for()
    workspace_name = page.locator("h1").inner_text()

    person, them = sign_in_with_sso(browser, sso_stack, "bob")
    them.goto(sso_stack.base_url + "/dashboard/members")
    row = them.locator("tr[data-member='bob@example.com']")
    row.wait_for()
    assert "editor" in row.inner_text().lower()
    them.goto(sso_stack.base_url + "/dashboard/workspace")
    assert them.locator("h1").inner_text() == workspace_name
    # An editor gets no single sign-on settings (owners only).
    assert them.locator("#sso").count() == 0
    owner.close()
    person.close()
