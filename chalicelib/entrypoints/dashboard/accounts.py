"""Accounts: sign up, sign in, sign out, change password."""
from __future__ import annotations

from chalicelib import config, errors
from chalicelib.entrypoints.dashboard.web import (
    ANON_COOKIE, DEVICE_COOKIE, SESSION_COOKIE, Page, redirect, render, route, safe_next, url,
)
from chalicelib import wiring as registry


@route("/", signed_in=False)
def home(page: Page):
    return redirect(url("/documents") if page.session else url("/sign-in"), 302)


@route("/sign-up", signed_in=False)
def sign_up_form(page: Page):
    if page.session:
        return redirect(url("/documents"), 302)
    return render(page, "sign_up.html", form={})


@route("/sign-up", methods=("POST",), signed_in=False)
def sign_up(page: Page):
    form = page.form()
    try:
        email = registry.accounts().sign_up(form.get("email", ""), form.get("password", ""),
                                            form.get("workspace_name", ""), page.client_ip())
    except errors.DocpubError as exc:
        return render(page, "sign_up.html", status=exc.status, headers=dict(exc.headers), error=exc,
                      form={"email": form.get("email", ""), "workspace_name": form.get("workspace_name", "")})
    # The same answer whether or not the email has an account (the mail tells its owner).
    return render(page, "check_email.html", text=f"We sent a message to {email}. Open the link in it to "
                                                 "confirm your address and finish signing up.")


@route("/sign-in", signed_in=False)
def sign_in_form(page: Page):
    if page.session:
        return redirect(safe_next(page.query.get("next")), 302)
    return render(page, "sign_in.html", form={}, next=safe_next(page.query.get("next")), sso_name=_sso_name())


@route("/sign-in", methods=("POST",), signed_in=False)
def sign_in(page: Page):
    form = page.form()
    try:
        started = registry.accounts().sign_in(form.get("email", ""), form.get("password", ""), page.client_ip(),
                                              previous_session_id=page.session_id,
                                              device_cookie=page.cookies.get(DEVICE_COOKIE))
    except errors.DocpubError as exc:
        return render(page, "sign_in.html", status=exc.status, headers=dict(exc.headers), error=exc,
                      form={"email": form.get("email", "")}, next=safe_next(form.get("next")), sso_name=_sso_name())
    start_session(page, started)
    return redirect(safe_next(form.get("next")))


def _sso_name() -> str | None:
    """"Sign in with NAME" (contract 7f), when this deployment has single sign-on."""
    return config.oidc_name() if config.sso_enabled() else None


def start_session(page: Page, started) -> None:
    page.session_id, page.session = started.session_id, started.session
    page.set_cookie(SESSION_COOKIE, started.session_id, max_age=config.dashboard_session_seconds())
    if started.device_token:  # this browser has signed in to this account (sign-in limits, services/accounts.py)
        from chalicelib.services.accounts import DEVICE_MAX_AGE_SECONDS

        page.set_cookie(DEVICE_COOKIE, started.device_token, max_age=DEVICE_MAX_AGE_SECONDS)
    if page.anon_id:
        page.clear_cookie(ANON_COOKIE)
        page.anon_id = None


@route("/sign-out", methods=("POST",), workspace=False)
def sign_out(page: Page):
    registry.accounts().sign_out(page.session_id)
    page.session = None
    page.clear_cookie(SESSION_COOKIE)
    return redirect(url("/sign-in", m="signed-out"))


@route("/account", workspace=False)
def account(page: Page):
    return render(page, "account.html", active="account")


@route("/account", methods=("POST",), workspace=False)
def change_password(page: Page):
    form = page.form()
    try:
        if form.get("new_password", "") != form.get("confirm_password", ""):
            raise errors.ValidationFailed.field("confirm_password", "does not match the new password")
        started = registry.accounts().change_password(page.signed_in_id, form.get("current_password", ""),
                                             form.get("new_password", ""), page.client_ip())
    except errors.DocpubError as exc:
        return render(page, "account.html", status=exc.status, headers=dict(exc.headers), error=exc,
                      active="account")
    start_session(page, started)
    return redirect(url("/account", m="password-changed"))

