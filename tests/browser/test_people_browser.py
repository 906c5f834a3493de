"""People in real Chromium against the real local stack (contract 7d): sign-up then
confirming the email, forgot password then reset, invite then join then role
limits then removal, and a workspace-only link opened by a member and refused to
an outsider. Mail is read from the stack's outbox folder, as a person would open it."""
from __future__ import annotations

import re

import httpx
import pytest

from tests.chromium import browser, confirm_sign_up, mail_link_in, sign_up  # noqa: F401 - the fixture

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

PASSWORD = "a long browser password"


def test_sign_up_then_confirm_the_email(stack, browser):
    context = browser.new_context()
    page = context.new_page()
    page.goto(stack.base_url + "/dashboard/sign-up")
    page.fill("input[name=email]", "people-signup@example.com")
    page.fill("input[name=password]", "password123")  # weak: refused with the reason
    page.fill("input[name=workspace_name]", "Signup Co")
    page.click("button[type=submit] >> text=Create workspace")
    page.locator("p >> text=too easy to guess").first.wait_for(state="visible", timeout=10_000)
    page.fill("input[name=password]", PASSWORD)
    page.fill("input[name=workspace_name]", "Signup Co")
    page.click("button[type=submit] >> text=Create workspace")
    page.locator("text=We sent a message to people-signup@example.com").wait_for(state="visible", timeout=10_000)
    # Not confirmed yet: signing in is refused (and sends a fresh link).
    page.goto(stack.base_url + "/dashboard/sign-in")
    page.fill("input[name=email]", "people-signup@example.com")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit] >> text=Sign in")
    page.locator("text=Confirm your email address first").wait_for(state="visible", timeout=10_000)
    page.goto(mail_link_in(stack.data_dir, "people-signup@example.com", "verify"))
    page.click("text=Confirm my email")
    page.wait_for_url("**/dashboard/keys**")
    page.locator("text=Email confirmed").wait_for(state="visible", timeout=10_000)
    assert page.locator(".who").inner_text().startswith("people-signup@example.com")
    context.close()


def test_forgot_password_then_reset(stack, browser):
    first = browser.new_context()
    sign_up(first.new_page(), stack, "people-forgot@example.com", "Forgot Co", PASSWORD)
    context = browser.new_context()
    page = context.new_page()
    page.goto(stack.base_url + "/dashboard/sign-in")
    page.click("text=Forgot your password?")
    page.fill("input[name=email]", "people-forgot@example.com")
    page.click("button[type=submit] >> text=Send the link")
    page.locator("text=If people-forgot@example.com has a Docpub account").wait_for(state="visible", timeout=10_000)
    page.goto(mail_link_in(stack.data_dir, "people-forgot@example.com", "reset"))
    page.fill("input[name=new_password]", "a completely new passphrase")
    page.fill("input[name=confirm_password]", "a completely new passphrase")
    page.click("button[type=submit] >> text=Change password")
    page.wait_for_url("**/dashboard/documents**")
    page.locator("text=Every other session of your account was signed out").wait_for(state="visible", timeout=10_000)
    # The first browser's session ended with the reset.
    other = first.pages[0]
    other.goto(stack.base_url + "/dashboard/documents")
    assert "/dashboard/sign-in" in other.url
    # The link worked once.
    page.goto(mail_link_in(stack.data_dir, "people-forgot@example.com", "reset"))
    page.locator("text=not valid any more").wait_for(state="visible", timeout=10_000)
    first.close()
    context.close()


def test_invite_join_role_limits_and_removal(stack, browser):
    owner_context = browser.new_context()
    owner = owner_context.new_page()
    sign_up(owner, stack, "people-owner@example.com", "Team Co", PASSWORD)
    owner.goto(stack.base_url + "/dashboard/members")
    owner.fill("#invite input[name=email]", "people-viewer@example.com")
    owner.select_option("#invite select[name=role]", "viewer")
    owner.click("button[type=submit] >> text=Send invitation")
    owner.locator("text=Invitation sent").wait_for(state="visible", timeout=10_000)
    owner.locator("ul.invites >> text=people-viewer@example.com").wait_for(state="visible", timeout=10_000)
    invitee_context = browser.new_context()
    invitee = invitee_context.new_page()
    invitee.goto(mail_link_in(stack.data_dir, "people-viewer@example.com", "invite"))
    invitee.locator("text=Join Team Co").wait_for(state="visible", timeout=10_000)
    invitee.fill("input[name=password]", PASSWORD)
    invitee.click("text=Create account and join")
    invitee.wait_for_url("**/dashboard/documents**")
    assert invitee.locator("[data-role]").inner_text() == "viewer"
    # A viewer sees no API keys link and cannot invite; a forged form post is refused.
    assert invitee.locator("nav >> text=API keys").count() == 0
    invitee.goto(stack.base_url + "/dashboard/members")
    assert invitee.locator("text=Send invitation").count() == 0
    csrf = invitee.locator("input[name=csrf_token]").first.get_attribute("value")
    forged = invitee.request.post(stack.base_url + "/dashboard/keys", form={"csrf_token": csrf, "name": "x"})
    assert forged.status == 403 and "viewer" in forged.text()

    # The owner promotes the viewer to editor: the next page shows it.
    owner.goto(stack.base_url + "/dashboard/members")
    row = owner.locator("tr[data-member='people-viewer@example.com']")
    row.locator("select[name=role]").select_option("editor")
    row.locator("text=Change").click()
    owner.locator("text=Role changed").wait_for(state="visible", timeout=10_000)
    invitee.goto(stack.base_url + "/dashboard/documents")
    assert invitee.locator("[data-role]").inner_text() == "editor"
    assert invitee.locator("nav >> text=API keys").count() == 1

    # The last owner cannot leave; removing the member ends their session at once.
    owner.on("dialog", lambda dialog: dialog.accept())  # "Leave this workspace? …" / "Remove …?"
    owner.locator("tr[data-member='people-owner@example.com'] >> text=Leave").click()
    owner.locator("p >> text=keeps at least one owner").first.wait_for(state="visible", timeout=10_000)
    owner.goto(stack.base_url + "/dashboard/members")
    owner.locator("tr[data-member='people-viewer@example.com'] >> text=Remove").click()
    owner.locator("text=Member removed").wait_for(state="visible", timeout=10_000)
    invitee.goto(stack.base_url + "/dashboard/documents")
    assert "/dashboard/sign-in" in invitee.url
    owner.goto(stack.base_url + "/dashboard/activity")
    owner.locator("text=member.remove").wait_for(state="visible", timeout=10_000)
    owner_context.close()
    invitee_context.close()


def test_workspace_only_link_opens_for_a_member_and_not_for_an_outsider(stack, browser):
    member_context = browser.new_context()
    member = member_context.new_page()
    sign_up(member, stack, "people-member@example.com", "Private Co", PASSWORD)
    member.fill("input[name=name]", "ci")
    member.click("text=Create key")
    key = member.locator("#new-key").inner_text().strip()
    with httpx.Client(base_url=stack.base_url, headers={"X-Api-Key": key}, timeout=30) as http:
        r = http.post("/api/v1/publish", json={"title": "Team plan", "html": "<h1>Only for the team</h1>",
                                               "share_access": "workspace"})
        assert r.status_code == 200, r.text
        share_url = r.json()["share_url"]
        raw = http.get(share_url.replace(stack.base_url, ""), follow_redirects=False)
        assert raw.status_code == 303 and raw.headers["cache-control"] == "private, no-store"

    # The member opens it (already signed in: straight to the document).
    member.goto(share_url)
    member.wait_for_url(share_url)
    assert member.locator("h1").first.inner_text() == "Team plan"
    frame = member.frame_locator("iframe#doc")
    assert frame.locator("h1").inner_text() == "Only for the team"

    # An outsider is asked to sign in; signed in elsewhere, they are refused.
    outsider_context = browser.new_context()
    outsider = outsider_context.new_page()
    outsider.goto(share_url)
    outsider.wait_for_url(re.compile(r"/dashboard/sign-in\?next="))
    sign_up(outsider, stack, "people-outsider@example.com", "Elsewhere", PASSWORD)
    response = outsider.goto(share_url)
    assert response.status == 404
    outsider.locator("text=shared with the members of its workspace only").wait_for(state="visible", timeout=10_000)
    # A member who was signed out signs in and lands on the document.
    fresh_context = browser.new_context()
    fresh = fresh_context.new_page()
    fresh.goto(share_url)
    fresh.wait_for_url(re.compile(r"/dashboard/sign-in\?next="))
    fresh.fill("input[name=email]", "people-member@example.com")
    fresh.fill("input[name=password]", PASSWORD)
    fresh.click("button[type=submit] >> text=Sign in")
    fresh.wait_for_url(share_url)
    assert fresh.frame_locator("iframe#doc").locator("h1").inner_text() == "Only for the team"
    for context in (member_context, outsider_context, fresh_context):
        context.close()


def test_a_member_removed_from_their_only_workspace_signs_in_and_joins_again(stack, browser):
    """Removed from the only workspace they had, a person still signs in (at 390 px): the
    welcome page lists the new invitation and joins it, or offers a workspace of their own;
    it fits the phone's width and passes axe-core."""
    from tests import axe

    owner_context = browser.new_context()
    owner = owner_context.new_page()
    sign_up(owner, stack, "people-lobby-owner@example.com", "Lobby Co", PASSWORD)
    owner.goto(stack.base_url + "/dashboard/members")
    owner.fill("#invite input[name=email]", "people-lobby@example.com")
    owner.select_option("#invite select[name=role]", "editor")
    owner.click("button[type=submit] >> text=Send invitation")
    owner.locator("text=Invitation sent").wait_for(state="visible", timeout=10_000)
    phone = browser.new_context(viewport={"width": 390, "height": 800})
    person = phone.new_page()
    person.goto(mail_link_in(stack.data_dir, "people-lobby@example.com", "invite"))
    person.fill("input[name=password]", PASSWORD)
    person.click("text=Create account and join")
    person.wait_for_url("**/dashboard/documents**")
    owner.on("dialog", lambda dialog: dialog.accept())
    owner.goto(stack.base_url + "/dashboard/members")
    owner.locator("tr[data-member='people-lobby@example.com'] >> text=Remove").click()
    owner.locator("text=Member removed").wait_for(state="visible", timeout=10_000)
    owner.fill("#invite input[name=email]", "people-lobby@example.com")
    owner.select_option("#invite select[name=role]", "viewer")
    owner.click("button[type=submit] >> text=Send invitation")
    owner.locator("text=Invitation sent").wait_for(state="visible", timeout=10_000)

    person.goto(stack.base_url + "/dashboard/sign-in")
    person.fill("input[name=email]", "people-lobby@example.com")
    person.fill("input[name=password]", PASSWORD)
    person.click("button[type=submit] >> text=Sign in")
    person.wait_for_url("**/dashboard/welcome")
    person.locator("text=not a member of any workspace any more").wait_for(state="visible", timeout=10_000)
    assert person.evaluate("document.documentElement.scrollWidth") <= 390
    assert not axe.violations(person), axe.violations(person)
    person.click("button >> text=Join Lobby Co")
    person.wait_for_url("**/dashboard/documents**")
    assert person.locator("[data-role]").inner_text() == "viewer"
    owner_context.close()
    phone.close()
