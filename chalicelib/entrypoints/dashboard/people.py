"""People: confirming an email, forgotten passwords, one-time sign-in links,
invitations, members and roles, the workspace switcher and the activity log.

Links that arrive by mail open a page with a button: the token is used by the
POST, so a mail scanner that follows links uses nothing."""
from __future__ import annotations

from typing import Any

from chalicelib import errors
from chalicelib.domain import roles
from chalicelib.entrypoints.dashboard.accounts import start_session
from chalicelib.entrypoints.dashboard.apps import carried_authorization, onward
from chalicelib.entrypoints.dashboard.web import Page, redirect, render, route, url
from chalicelib.entrypoints.http import viewer_cookie
from chalicelib import wiring as registry


def accounts():
    return registry.accounts()


def workspaces():
    return registry.workspaces()


def people():
    return registry.people()


def activity_service():
    return registry.activity()


def _token(page: Page) -> str:
    return (page.form().get("token") if page.request.method == "POST" else page.query.get("token")) or ""


def _invalid_link(page: Page, error: errors.DocpubError):
    return render(page, "error.html", status=error.status, error=error)


# ------------------------------------------------------------------ confirming an email

@route("/verify", signed_in=False)
def verify_form(page: Page):
    return render(page, "confirm_link.html", heading="Confirm your email address",
                  text="One click finishes signing up and signs you in.", action=url("/verify"),
                  token=_token(page), button="Confirm my email")


@route("/verify", methods=("POST",), signed_in=False)
def verify(page: Page):
    try:
        started = accounts().verify_email(_token(page))
    except errors.DocpubError as exc:
        return _invalid_link(page, exc)
    start_session(page, started)
    return redirect(url("/keys", m="verified"))


# ------------------------------------------------------------------ forgotten password

@route("/forgot", signed_in=False)
def forgot_form(page: Page):
    return render(page, "forgot.html", form={})


@route("/forgot", methods=("POST",), signed_in=False)
def forgot(page: Page):
    form = page.form()
    try:
        email = accounts().forgot_password(form.get("email", ""), page.client_ip())
    except errors.DocpubError as exc:
        return render(page, "forgot.html", status=exc.status, headers=dict(exc.headers), error=exc,
                      form={"email": form.get("email", "")})
    return render(page, "check_email.html", text=f"If {email} has a Docpub account, we sent it a link to "
                                                 "choose a new password.")


@route("/reset", signed_in=False)
def reset_form(page: Page):
    token = _token(page)
    record = accounts().peek_token(token, "reset")
    return render(page, "reset.html", token=token, valid=record is not None,
                  email=record.email if record else None)


@route("/reset", methods=("POST",), signed_in=False)
def reset(page: Page):
    form = page.form()
    token = _token(page)
    try:
        if form.get("new_password", "") != form.get("confirm_password", ""):
            raise errors.ValidationFailed.field("confirm_password", "does not match the new password")
        started = accounts().reset_password(token, form.get("new_password", ""))
    except errors.DocpubError as exc:
        record = accounts().peek_token(token, "reset")
        return render(page, "reset.html", status=exc.status, headers=dict(exc.headers), error=exc, token=token,
                      valid=record is not None, email=record.email if record else None)
    if page.session_id:
        accounts().sign_out(page.session_id)
    start_session(page, started)
    return redirect(url("/documents", m="password-reset"))


# ------------------------------------------------------------------ one-time sign-in links

@route("/login", signed_in=False)
def login_form(page: Page):
    return render(page, "confirm_link.html", heading="Sign in to Docpub",
                  text="This one-time link signs you in to the workspace it was made for.",
                  action=url("/login"), token=_token(page), button="Sign in")


@route("/login", methods=("POST",), signed_in=False)
def login(page: Page):
    try:
        started = accounts().use_login_link(_token(page))
    except errors.DocpubError as exc:
        return _invalid_link(page, exc)
    if page.session_id:
        accounts().sign_out(page.session_id)
    start_session(page, started)
    return redirect(url("/documents", m="signed-in"))


# ------------------------------------------------------------------ invitations

@route("/join", signed_in=False)
def join_form(page: Page):
    token = _token(page)
    invitation = people().invitation(token)
    return render(page, "join.html", token=token, invitation=invitation,
                  article=roles.ARTICLES.get(invitation.role, "a") if invitation else "",
                  role_description=roles.DESCRIPTIONS.get(invitation.role, "") if invitation else "")


@route("/join", methods=("POST",), workspace=False)
def join(page: Page):
    invitation = people().accept(_token(page), page.signed_in.email)
    accounts().switch_workspace(page.signed_in_id, invitation.workspace_id)
    return redirect(url("/documents", m="joined"))


@route("/join/sign-up", methods=("POST",), signed_in=False)
def join_sign_up(page: Page):
    token = _token(page)
    try:
        started = accounts().sign_up_invited(token, page.form().get("password", ""))
    except errors.DocpubError as exc:
        invitation = people().invitation(token)
        return render(page, "join.html", status=exc.status, headers=dict(exc.headers), error=exc, token=token,
                      invitation=invitation,
                      article=roles.ARTICLES.get(invitation.role, "a") if invitation else "",
                      role_description=roles.DESCRIPTIONS.get(invitation.role, "") if invitation else "")
    if page.session_id:
        accounts().sign_out(page.session_id)
    start_session(page, started)
    return redirect(url("/documents", m="joined"))


# ------------------------------------------------------------------ in no workspace

@route("/welcome", workspace=False)
def welcome(page: Page, status: int = 200, error=None, form=None):
    """Signed in, but a member of no workspace (removed from the last one): open an
    invitation's link to join, or make a workspace of one's own. An app's authorization
    request that sent them here rides along in the forms, to its consent page after."""
    fields = page.form() if page.request.method == "POST" else page.query
    if page.signed_in.workspace_id:
        return onward(page, fields)
    mine = people().workspaces_of(page.signed_in.email)
    if mine:  # joined one meanwhile (another browser): go there
        accounts().switch_workspace(page.signed_in_id, mine[0]["workspace_id"])
        return onward(page, fields)
    authorization, problem = carried_authorization(page, fields)
    return render(page, "welcome.html", status=status, error=error, form=form or {},
                  invitations=people().pending_for(page.signed_in.email), authorization=authorization,
                  authorization_problem=problem, carried=authorization.params() if authorization else {})


@route("/welcome/join", methods=("POST",), workspace=False)
def join_pending(page: Page):
    """Join from a pending invitation listed on the welcome page (the sign-in proved the address)."""
    invitation = people().accept_pending(page.signed_in.email, page.form().get("invite_id", ""))
    accounts().switch_workspace(page.signed_in_id, invitation.workspace_id)
    return onward(page, page.form(), "joined")


@route("/welcome/workspace", methods=("POST",), workspace=False)
def create_workspace(page: Page):
    form = page.form()
    if page.signed_in.workspace_id:
        return onward(page, form)
    try:
        page.session = accounts().create_own_workspace(page.signed_in_id, form.get("workspace_name", ""))
    except errors.DocpubError as exc:
        return welcome.__wrapped__(page, exc.status, exc, form)  # type: ignore[attr-defined]
    return onward(page, form, "workspace-created")


# ------------------------------------------------------------------ members

@route("/members")
def members_page(page: Page, status: int = 200, error=None, form=None):
    extra: dict[str, Any] = {}
    keys = page.query.get("keys", "")
    if page.query.get("m") == "removed" and keys.isdigit() and len(keys) < 7:  # a count, never echoed text
        n = int(keys)
        extra["message"] = (f"Member removed: their sessions and connected apps in this workspace ended, "
                            f"and {n} API key{'s' if n != 1 else ''} revoked.")
    return render(page, "members.html", status=status, active="members", error=error, form=form or {}, **extra,
                  workspace=workspaces().get_workspace(page.workspace_id), roles=roles.ROLES,
                  members=people().list_members(page.actor),
                  invites=people().list_invites(page.actor) if roles.allows(page.role, "invite_member") else [])


@route("/members/invite", methods=("POST",))
def invite(page: Page):
    form = page.form()
    try:
        people().invite(page.actor, form.get("email", ""), form.get("role", ""))
    except errors.ForbiddenRole:
        raise
    except errors.DocpubError as exc:
        return members_page.__wrapped__(page, exc.status, exc, form)  # type: ignore[attr-defined]
    return redirect(url("/members", m="invited"))


@route("/members/invites/revoke", methods=("POST",))
def revoke_invite(page: Page):
    people().revoke_invite(page.actor, page.form().get("email", ""))
    return redirect(url("/members", m="invite-revoked"))


@route("/members/role", methods=("POST",))
def set_role(page: Page):
    form = page.form()
    try:
        people().set_role(page.actor, form.get("email", ""), form.get("role", ""))
    except errors.ForbiddenRole:
        raise
    except errors.DocpubError as exc:
        return members_page.__wrapped__(page, exc.status, exc)  # type: ignore[attr-defined]
    return redirect(url("/members", m="role-changed"))


@route("/members/remove", methods=("POST",))
def remove(page: Page):
    email = page.form().get("email", "")
    try:
        removed = people().remove(page.actor, email)
    except errors.ForbiddenRole:
        raise
    except errors.DocpubError as exc:
        return members_page.__wrapped__(page, exc.status, exc)  # type: ignore[attr-defined]
    if removed["email"] == page.actor.member:  # left: this session ended with the membership
        return redirect(url("/sign-in", m="left"))
    return redirect(url("/members", m="removed", keys=str(removed["keys_revoked"])))


# ------------------------------------------------------------------ switcher and activity

@route("/workspaces/switch", methods=("POST",), workspace=False)
def switch(page: Page):
    accounts().switch_workspace(page.signed_in_id, page.form().get("workspace_id", ""))
    return redirect(url("/documents", m="switched"))


@route("/activity")
def activity_page(page: Page):
    listed = activity_service().list(page.actor, 50, page.query.get("cursor") or None)
    return render(page, "activity.html", active="activity", entries=listed.activity,
                  next_cursor=listed.next_cursor)


# ------------------------------------------------------------------ workspace-only links

@route("/open")
def open_shared(page: Page):
    """A workspace-only link sent its viewer here (after sign-in when needed): a member
    gets a pass for that link and goes back to it; anyone else is told why not."""
    import re

    from chalicelib.services.sharing import MEMBER_COOKIE

    share_id = page.query.get("share", "")
    version = page.query.get("v", "")
    value, max_age, path = registry.sharing().member_pass(share_id, page.actor)
    page.set_cookies.append(viewer_cookie(MEMBER_COOKIE, value, path, max_age))
    target = path + (f"?v={version}" if re.fullmatch(r"[0-9]{1,9}", version or "") else "")
    if page.query.get("review") == "1":  # from a share page's review panel (or a review request's mail)
        target += "#review"
    return redirect(target)


# ------------------------------------------------------------------ shared with me (contract 7f)

@route("/shared", workspace=False)
def shared_with_me(page: Page):
    """Documents of other workspaces that the signed-in account's email may open, newest first."""
    items = registry.shared_with_me().listed(page.actor)
    return render(page, "shared.html", active="shared", items=items)


@route("/shared/open", workspace=False)
def open_as_recipient(page: Page):
    """Open one of them as its recipient: the account's sign-in verified the address, so no code."""
    granted = registry.shared_with_me().open(page.actor, page.query.get("share", ""))
    page.set_cookies.append(viewer_cookie(granted.cookie_name, granted.cookie_value, granted.path, granted.max_age))
    return redirect(granted.path)
