"""The dashboard's request machinery: the blueprint, one request's state (session,
CSRF binding, cookies), form parsing, rendering and the `route` decorator that
every page module uses (session check, CSRF on POST, errors as pages, security
headers). The pages themselves live in the sibling modules, one per page.
"""
from __future__ import annotations

import functools
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional
from urllib.parse import quote, unquote, urlencode, urlparse

from chalice import Blueprint, Response

from chalicelib import config, errors, rendering
from chalicelib.domain import limits, roles
from chalicelib.entrypoints.dashboard import forms
from chalicelib.entrypoints.http import as_error, client_ip, compress, error_response, parse_cookies
from chalicelib.domain.limits import MAX_HTML_BYTES
from chalicelib import wiring as registry

if TYPE_CHECKING:
    from chalicelib.services.access import Actor
    from chalicelib.services.accounts import Session

log = logging.getLogger("docpub")

bp = Blueprint("chalicelib.entrypoints.dashboard")

ROOT = Path(__file__).resolve().parent.parent.parent
STATIC = ROOT / "static" / "dashboard"
STATIC_TYPES = {"dashboard.js": "text/javascript; charset=utf-8", "dashboard.css": "text/css; charset=utf-8",
                "favicon.svg": "image/svg+xml"}

SESSION_COOKIE = "docpub_session"
ANON_COOKIE = "docpub_csrf"
DEVICE_COOKIE = "docpub_device"  # a browser that signed in to an account before (sign-in limits)
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}
# Flash messages are chosen by code, never echoed from the query string.
MESSAGES = {
    "signed-up": "Welcome! Your workspace is ready. Create an API key to publish from scripts.",
    "verified": "Email confirmed. Welcome! Create an API key to publish from scripts.",
    "password-reset": "Password changed. Every other session of your account was signed out.",
    "joined": "You joined the workspace.",
    "workspace-created": "Your workspace is ready. Create an API key to publish from scripts.",
    "authorization-stale": "The app's authorization request could not be continued: connect again from the app.",
    "switched": "Switched workspace.",
    "invited": "Invitation sent.",
    "invite-revoked": "Invitation withdrawn.",
    "role-changed": "Role changed.",
    "removed": "Member removed: their sessions and connected apps in this workspace ended.",
    "left": "You left the workspace.",
    "signed-in": "Signed in.",
    "signed-out": "Signed out.",
    "expired": "Your session has ended; sign in again.",
    "password-changed": "Password changed. Other sessions were signed out.",
    "saved": "Saved.",
    "published": "Published a new version.",
    "created": "Document published.",
    "restored": "Version restored as the newest version.",
    "deleted": "Document deleted.",
    "revoked": "API key revoked. It stops working immediately.",
    "disconnected": "App disconnected. Its access ended immediately.",
    "passphrase-set": "Passphrase set: the share link now asks for it.",
    "passphrase-removed": "Passphrase removed: the share link is public again.",
    "branding-saved": "Branding saved.",
    "scanning-saved": "Scanning settings saved.",
    "sso-saved": "Single sign-on settings saved.",
    "link-saved": "Share link settings saved.",
    "audience-saved": "Who may open the link saved.",
    "recipient-revoked": "Recipient revoked: their next request is refused.",
    "link-rotated": "New share link made: the old link no longer works.",
    "resolved": "Feedback resolved.",
    "reopened": "Feedback reopened.",
    "reviewed": "Review recorded.",
    "review-requested": "Review requested: each reviewer was mailed a link to the document.",
}
PRO_FEATURES = [
    ("Unlimited documents", "the free plan holds 5"),
    ("Unlimited API keys", "the free plan allows 1"),
    ("Passphrase-protected links", "share a document only with people who know the passphrase"),
    ("Editing in the dashboard", "change the HTML in the browser and save it as a new version"),
    ("Custom branding", "your name and tagline on share pages instead of the Docpub mark"),
]


# ------------------------------------------------------------------ request state

class Page:
    """What one dashboard request knows: its session, its CSRF binding, the cookies to set."""

    def __init__(self, request):
        self.request = request
        self.cookies = parse_cookies(request.headers.get("cookie"))
        self.set_cookies: list[str] = []
        self.session_id = self.cookies.get(SESSION_COOKIE)
        self.session = registry.accounts().session(self.session_id) if self.session_id else None
        self.anon_id = self.cookies.get(ANON_COOKIE)
        self._form: Optional[dict] = None
        self._files: Optional[dict] = None

    # who
    @property
    def signed_in(self) -> Session:
        """The session of a page that needs one (`route` sends anyone without one to sign in first)."""
        assert self.session is not None, "route(signed_in=True) lets no page without a session through"
        return self.session

    @property
    def signed_in_id(self) -> str:
        """The session id of a page that needs one."""
        assert self.session_id is not None and self.session is not None, "route(signed_in=True) checked it"
        return self.session_id

    @property
    def actor(self) -> Actor:
        """The signed-in member, with their current role in the current workspace."""
        return self.signed_in.actor

    @property
    def role(self) -> str:
        return self.session.role if self.session else ""

    @property
    def workspace_id(self) -> str:
        return self.signed_in.workspace_id

    # inputs
    @property
    def query(self) -> dict[str, str]:
        return {k: v for k, v in (self.request.query_params or {}).items()}

    def form(self) -> dict[str, str]:
        if self._form is None:
            self._form, self._files = forms.parse_form(self.request.headers.get("content-type"),
                                                       self.request.raw_body)
        return self._form

    def file(self, name: str) -> Optional[tuple[str, bytes]]:
        self.form()
        return (self._files or {}).get(name)

    def client_ip(self) -> str:
        return client_ip(self.request)

    # CSRF
    def binding(self) -> Optional[str]:
        if self.session is not None:
            return self.session_id
        return self.anon_id

    def csrf_token(self) -> str:
        binding = self.binding()
        if binding is None:
            import secrets

            self.anon_id = binding = secrets.token_urlsafe(24)
            self.set_cookie(ANON_COOKIE, binding, max_age=config.dashboard_session_seconds())
        return registry.accounts().csrf_token(binding)

    def csrf_ok(self) -> bool:
        return registry.accounts().check_csrf(self.binding(), self.form().get("csrf_token"))

    # cookies
    def set_cookie(self, name: str, value: str, max_age: Optional[int] = None) -> None:
        parts = [f"{name}={value}", f"Path={url('')}", "HttpOnly", "SameSite=Lax"]
        if max_age is not None:
            parts.append(f"Max-Age={max_age}")
        if secure_cookies():
            parts.append("Secure")
        self.set_cookies.append("; ".join(parts))

    def clear_cookie(self, name: str) -> None:
        self.set_cookie(name, "", max_age=0)


def secure_cookies() -> bool:
    return config.base_url().startswith("https://")


# ------------------------------------------------------------------ rendering

def url(path: str = "", **params) -> str:
    base = urlparse(config.base_url()).path.rstrip("/") + "/dashboard"
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return base + path + (("?" + query) if query else "")


@functools.lru_cache(maxsize=1)
def template_globals() -> dict:
    """What every dashboard template (and the macros it imports) can use."""
    from chalicelib.services.uploads import MAX_ZIP_BYTES
    from chalicelib.services.workspaces import upgrade_path

    return {"url": url, "pro_features": PRO_FEATURES, "max_html_bytes": MAX_HTML_BYTES, "limits": limits,
            # A .zip over what one request carries goes to storage first (dashboard.js, upload_tickets).
            "max_bundle_bytes": MAX_ZIP_BYTES, "direct_upload_bytes": limits.DASHBOARD_DIRECT_UPLOAD_BYTES,
            "upgrade_path": upgrade_path}


def render(page: Page, template: str, status: int = 200, headers: Optional[dict] = None, **context) -> Response:
    context.setdefault("message", MESSAGES.get(page.query.get("m", "")))
    context.setdefault("active", "")
    if page.session is not None and "my_workspaces" not in context:
        context["my_workspaces"] = registry.people().workspaces_of(page.session.email)
    html = rendering.page("dashboard/" + template, template_globals(), session=page.session,
                          csrf_token=page.csrf_token(), base_url=config.base_url(),
                          can=lambda operation: page.session is not None and roles.allows(page.session.role,
                                                                                           operation),
                          **context)
    return Response(body=html, status_code=status,
                    headers={"Content-Type": "text/html; charset=utf-8", **(headers or {})})


def redirect(location: str, status: int = 303) -> Response:
    return Response(body="", status_code=status, headers={"Location": location})


def error_page(page: Optional[Page], error: errors.DocpubError) -> Response:
    """The dashboard's answer for any error (as_error maps exceptions to errors)."""
    if page is None:  # the request could not even be read: no template context
        return Response(error.message, status_code=error.status,
                        headers={"Content-Type": "text/plain; charset=utf-8", **error.headers})
    return render(page, "error.html", status=error.status, headers=dict(error.headers), error=error)


def finish(page: Optional[Page], request, response: Response) -> Response:
    headers = dict(response.headers)
    for name, value in SECURITY_HEADERS.items():
        headers.setdefault(name, value)  # a page may only widen form-action (the consent page)
    headers.setdefault("Cache-Control", "no-store")
    if page is not None and page.set_cookies:
        headers["Set-Cookie"] = page.set_cookies
    response.headers = headers
    return compress(request, response)


# ------------------------------------------------------------------ the route decorator

def route(path: str, methods: tuple[str, ...] = ("GET",), signed_in: bool = True,
          answers_json: bool = False, workspace: bool = True) -> Callable:
    """Register a dashboard page: session check, CSRF on POST, errors as pages (or, for a
    route its script calls, `answers_json`, as the contract's error body), security headers.
    A session in no workspace (its person was removed from the last one) reaches only the
    pages marked `workspace=False`; any other sends it to the welcome page."""

    def decorator(view: Callable) -> Callable:
        @functools.wraps(view)
        def handler(**params):
            request = bp.current_request
            page = None
            try:
                page = Page(request)
                if signed_in and page.session is None:
                    if request.method == "GET":
                        return finish(page, request, redirect(url("/sign-in", next=current_path(request))))
                    if page.session_id:
                        page.clear_cookie(SESSION_COOKIE)
                    return finish(page, request, redirect(url("/sign-in", m="expired")))
                if signed_in and workspace and page.session is not None and not page.session.workspace_id:
                    return finish(page, request, redirect(url("/welcome")))
                if request.method == "POST" and not page.csrf_ok():
                    raise errors.Forbidden("This form has expired or did not come from this site. "
                                           "Go back, reload the page and try again.")
                response = view(page, **params)
            except Exception as exc:  # noqa: BLE001 - mapped by as_error: a page, never a stack trace
                response = (error_response(as_error(exc, bp)) if answers_json
                            else error_page(page, as_error(exc, bp)))
            return finish(page, request, response)

        kwargs: dict[str, Any] = {"methods": list(methods)}
        if "POST" in methods:
            kwargs["content_types"] = forms.FORM_TYPES
        bp.route(path, **kwargs)(handler)
        return handler

    return decorator


def current_path(request) -> str:
    path = (request.context or {}).get("path") or url("")
    query = request.query_params or {}
    return path + ("?" + urlencode(query) if query else "")


# Only plain path characters: no control characters (header injection), no scheme.
_SAFE_PATH = re.compile(r"[A-Za-z0-9/_.~%?=&+-]*")


def safe_next(value: Optional[str]) -> str:
    """Where to go after signing in: a path under the dashboard, after resolving
    dot-segments (also percent-encoded ones, which browsers resolve too), or the
    document list. `/dashboard/../d/<share>` would land on user HTML."""
    fallback = url("/documents")
    base = url("")
    if not value or not _SAFE_PATH.fullmatch(value) or "//" in value or "\\" in value:
        return fallback
    path, sep, query = value.partition("?")
    decoded = unquote(path)
    if "%" in decoded or "\\" in decoded or "//" in decoded:
        return fallback  # encoded twice: nothing the dashboard links to looks like that
    segments: list[str] = []
    for segment in decoded.split("/")[1:]:
        if segment == "..":
            if segments:
                segments.pop()
        elif segment != ".":
            segments.append(segment)
    resolved = "/" + "/".join(segments)
    if not (value.startswith("/") and (resolved == base or resolved.startswith(base + "/"))):
        return fallback
    return quote(resolved, safe="/_.~-+=&") + (sep + query if query else "")


def ticked(form: dict, name: str) -> bool:
    """A checkbox of the form was ticked (browsers send "on")."""
    return form.get(name) == "on"
