"""OAuth: the consent page and "Connected apps"."""
from __future__ import annotations

from typing import Mapping, Optional
from urllib.parse import urlencode, urlparse

from chalicelib import errors
from chalicelib.domain import roles
from chalicelib.entrypoints.dashboard.web import SECURITY_HEADERS, Page, error_page, redirect, render, route, url
from chalicelib import wiring as registry


def _authorization(page: Page, params: dict):
    """The validated request, or the answer to give instead (error page or redirect)."""
    from chalicelib.services.oauth import NotRedirectable, RedirectError

    registry.oauth().limit("consent", page.client_ip())  # 429 past it: each page may fetch a client's metadata
    try:
        return registry.oauth().check_authorization(params, page.client_ip()), None
    except RedirectError as exc:
        if page.request.method == "GET":  # a link anyone can send: no automatic redirect (RFC 9700 4.11.2)
            from chalicelib.entrypoints.oauth import redirect_error_page

            return None, redirect_error_page(exc)
        return None, redirect(exc.location(), 302)
    except NotRedirectable as exc:
        # 503 (the cap on new apps) keeps its status and Retry-After; every other refusal is 400.
        unavailable = exc.status == 503
        return None, error_page(page, errors.DocpubError(exc.message, status=503 if unavailable else 400,
                                                         headers=dict(exc.headers) if unavailable else None))


def consent_url(request) -> str:
    """The consent page of a checked request: only its checked parameters (`params()`;
    urlencode, not url(): an empty state is a state)."""
    return url("/oauth/authorize") + "?" + urlencode(request.params())


def carried_authorization(page: Page, fields: Mapping[str, str]):
    """(the authorization request the welcome page carries, or None; why it cannot go on, or None)."""
    from chalicelib.services.oauth import OAuthError

    try:
        return registry.oauth().resume(fields, page.client_ip()), None
    except OAuthError as exc:
        return None, exc.message


def onward(page: Page, fields: Mapping[str, str], message: Optional[str] = None):
    """Where a person who now has a workspace goes from the welcome page: the consent page of
    the request it carried (checked again), else the documents. A request that no longer
    checks out is dropped in words (m=authorization-stale), never followed."""
    request, problem = carried_authorization(page, fields)
    if request is not None:
        return redirect(consent_url(request))
    return redirect(url("/documents", m="authorization-stale" if problem else message))


# workspace=False: a person in no workspace is sent to the welcome page with the request.
@route("/oauth/authorize", workspace=False)
def consent(page: Page):
    request, answer = _authorization(page, page.query)
    if request is None:
        return answer
    if not page.signed_in.workspace_id:
        return redirect(url("/welcome") + "?" + urlencode(request.params()))
    from chalicelib.services.oauth import SCOPE_DESCRIPTIONS

    workspace = registry.workspaces().get_workspace(page.workspace_id)
    target = urlparse(request.redirect_uri)
    # The form's answer redirects to the client: allow exactly that origin as a form target.
    # CSP has no syntax for an IPv6 literal (Chromium ignores `http://[::1]:port` and then
    # blocks the redirect): such a loopback client is allowed by its scheme alone.
    source = f"{target.scheme}:" if target.netloc.startswith("[") else f"{target.scheme}://{target.netloc}"
    csp = SECURITY_HEADERS["Content-Security-Policy"].replace("form-action 'self'", f"form-action 'self' {source}")
    return render(page, "consent.html", headers={"Content-Security-Policy": csp}, request=request,
                  workspace=workspace, scopes=[(s, SCOPE_DESCRIPTIONS[s]) for s in request.scopes
                                               if s in roles.ROLE_SCOPES.get(page.role, ())],
                  params=request.params())


@route("/oauth/authorize", methods=("POST",), workspace=False)
def consent_answer(page: Page):
    form = page.form()
    request, answer = _authorization(page, {k: v for k, v in form.items() if k not in ("csrf_token", "decision")})
    if request is None:
        return answer
    if not page.signed_in.workspace_id:  # removed from the workspace since the page was shown
        return redirect(url("/welcome") + "?" + urlencode(request.params()))
    location = registry.oauth().decide(request, form.get("decision") == "allow", page.workspace_id,
                                       page.signed_in.email, by=page.actor)
    return redirect(location, 303)


@route("/apps")
def connected_apps(page: Page):
    from chalicelib.services.oauth import SCOPE_DESCRIPTIONS

    return render(page, "apps.html", active="apps",
                  apps=registry.oauth().connected_apps(page.workspace_id, by=page.actor),
                  scope_descriptions=SCOPE_DESCRIPTIONS)


@route("/apps/{grant_id}/revoke", methods=("POST",))
def disconnect_app(page: Page, grant_id: str):
    registry.oauth().disconnect(page.workspace_id, grant_id, by=page.actor)
    return redirect(url("/apps", m="disconnected"))

