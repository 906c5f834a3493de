"""Single sign-on (contract 7f): "Sign in with NAME" on the sign-in page, the provider's
callback, and the workspace's `sso_auto_join` setting (dashboard only, no REST route).
Every rule is in services/sso.py; this module moves the browser and its cookies.

The SSO cookie (HttpOnly, SameSite=Lax, 10 minutes, path /dashboard) carries the sign-in's
`state` and where to go afterwards, signed: the callback is taken only in the browser that
started the sign-in. The provider's redirect back is a top-level GET, which Lax sends it on."""
from __future__ import annotations

from chalicelib import config, errors
from chalicelib.entrypoints.dashboard.accounts import start_session
from chalicelib.entrypoints.dashboard.web import SESSION_COOKIE, Page, redirect, render, route, safe_next, url
from chalicelib import wiring as registry

SSO_COOKIE = "docpub_sso"
SSO_SALT = "docpub-sso-browser"


def _serializer():
    from itsdangerous import URLSafeTimedSerializer

    return URLSafeTimedSerializer(config.secret_key(), salt=SSO_SALT)


def sso_button() -> str | None:
    """What the sign-in page's SSO button names, or None without SSO."""
    return config.oidc_name() if config.sso_enabled() else None


@route("/sso/start", signed_in=False)
def sso_start(page: Page):
    from chalicelib.services.sso import STATE_SECONDS

    started = registry.sso().begin(page.client_ip())
    value = _serializer().dumps({"s": started.state, "n": safe_next(page.query.get("next"))})
    page.set_cookie(SSO_COOKIE, value, max_age=STATE_SECONDS)
    return redirect(started.url)


@route("/sso/callback", signed_in=False)
def sso_callback(page: Page):
    from itsdangerous import BadData

    from chalicelib.services.sso import STATE_SECONDS

    raw = page.cookies.get(SSO_COOKIE) or ""
    try:
        kept = _serializer().loads(raw, max_age=STATE_SECONDS) if raw and len(raw) < 2000 else {}
    except BadData:
        kept = {}
    kept = kept if isinstance(kept, dict) else {}
    page.clear_cookie(SSO_COOKIE)
    query = page.query
    next_path = safe_next(kept.get("n") if isinstance(kept.get("n"), str) else None)
    try:
        started = registry.sso().finish(query.get("state"), kept.get("s") if isinstance(kept.get("s"), str) else None,
                                        query.get("code"), query.get("error"))
    except errors.DocpubError as exc:
        return render(page, "sign_in.html", status=exc.status, headers=dict(exc.headers), error=exc, form={},
                      next=next_path, sso_name=sso_button())
    if page.session_id:
        registry.accounts().sign_out(page.session_id)  # rotation: a pre-sign-in id never becomes valid
        page.clear_cookie(SESSION_COOKIE)
    start_session(page, started)
    return redirect(next_path)


# ------------------------------------------------------------------ the workspace setting

@route("/workspace/sso", methods=("POST",))
def auto_join(page: Page):
    from chalicelib.entrypoints.dashboard.workspace import _workspace_page

    form = page.form()
    try:
        if form.get("remove"):
            registry.sso().clear_auto_join(page.signed_in)
        else:
            registry.sso().set_auto_join(page.signed_in, form.get("domain"), form.get("role"))
    except errors.DocpubError as exc:
        return _workspace_page(page, exc.status, error=exc, form=form)
    return redirect(url("/workspace", m="sso-saved"))
