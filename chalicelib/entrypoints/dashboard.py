"""The web dashboard: server-rendered pages under /dashboard (a chalice Blueprint).

An adapter like REST and MCP: every rule is in the service layer (accounts,
documents, workspaces, editing, sharing, feedback). This module parses forms,
checks the session and CSRF token, calls one service function and renders a
jinja2 template (autoescaped; jinja2 is imported on the first dashboard request
only). Pages work without JavaScript; /dashboard/static/dashboard.js adds copy
buttons, delete confirmation and size counters. User HTML is never rendered
here: versions open through the sandboxed share route (/d/<id>?v=N).
"""
from __future__ import annotations

import functools
import logging
import re
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import parse_qs, quote, unquote, urlencode, urlparse

from chalice import Blueprint, Response

from chalicelib import config, errors
from chalicelib.domain import limits
from chalicelib.entrypoints.http import as_error, client_ip, compress, parse_cookies
from chalicelib.models import MAX_HTML_BYTES

log = logging.getLogger("docpub")

bp = Blueprint(__name__)

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates" / "dashboard"
STATIC = ROOT / "static" / "dashboard"
STATIC_TYPES = {"dashboard.js": "text/javascript; charset=utf-8", "dashboard.css": "text/css; charset=utf-8",
                "favicon.svg": "image/svg+xml"}

SESSION_COOKIE = "docpub_session"
ANON_COOKIE = "docpub_csrf"
DEVICE_COOKIE = "docpub_device"  # a browser that signed in to an account before (sign-in limits)
FORM_TYPES = ["application/x-www-form-urlencoded", "multipart/form-data"]
MAX_FORM_BYTES = MAX_HTML_BYTES + 512 * 1024
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}
# Flash messages are chosen by code, never echoed from the query string.
MESSAGES = {
    "signed-up": "Welcome! Your workspace is ready. Create an API key to publish from scripts.",
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
    "link-saved": "Share link settings saved.",
    "link-rotated": "New share link made: the old link no longer works.",
    "resolved": "Feedback resolved.",
    "reopened": "Feedback reopened.",
}
PRO_FEATURES = [
    ("Unlimited documents", "the free plan holds 5"),
    ("Unlimited API keys", "the free plan allows 1"),
    ("Passphrase-protected links", "share a document only with people who know the passphrase"),
    ("Editing in the dashboard", "change the HTML in the browser and save it as a new version"),
    ("Custom branding", "your name and tagline on share pages instead of the Docpub mark"),
]
_UUID = re.compile(r"^[0-9a-fA-F-]{36}$")


# ------------------------------------------------------------------ request state

class Page:
    """What one dashboard request knows: its session, its CSRF binding, the cookies to set."""

    def __init__(self, request):
        self.request = request
        self.cookies = parse_cookies(request.headers.get("cookie"))
        self.set_cookies: list[str] = []
        self.session_id = self.cookies.get(SESSION_COOKIE)
        self.session = accounts().session(self.session_id) if self.session_id else None
        self.anon_id = self.cookies.get(ANON_COOKIE)
        self._form: Optional[dict] = None
        self._files: Optional[dict] = None

    # who
    @property
    def actor(self):
        from chalicelib.services.documents import Actor

        return Actor(self.session.workspace_id)

    @property
    def workspace_id(self) -> str:
        return self.session.workspace_id

    # inputs
    @property
    def query(self) -> dict[str, str]:
        return {k: v for k, v in (self.request.query_params or {}).items()}

    def form(self) -> dict[str, str]:
        if self._form is None:
            self._form, self._files = parse_form(self.request)
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
        return accounts().csrf_token(binding)

    def csrf_ok(self) -> bool:
        return accounts().check_csrf(self.binding(), self.form().get("csrf_token"))

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


def parse_form(request) -> tuple[dict[str, str], dict[str, tuple[str, bytes]]]:
    raw = request.raw_body or b""
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    if len(raw) > MAX_FORM_BYTES:
        from chalicelib.domain.limits import encoded_html

        encoded_html(raw.decode("utf-8", "replace"))  # the contract's 413 and message
    content_type = request.headers.get("content-type") or ""
    if content_type.lower().startswith("multipart/form-data"):
        return parse_multipart(content_type, raw)
    fields = parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[-1] for k, v in fields.items()}, {}


def parse_multipart(content_type: str, body: bytes) -> tuple[dict[str, str], dict[str, tuple[str, bytes]]]:
    """multipart/form-data as browsers send it; file contents stay exact bytes."""
    match = re.search(r'boundary="?([^";]+)"?', content_type, re.I)
    if not match:
        raise errors.ValidationFailed("The form could not be read; reload the page and try again.")
    delimiter = b"--" + match.group(1).encode("latin-1")
    fields: dict[str, str] = {}
    files: dict[str, tuple[str, bytes]] = {}
    for part in body.split(delimiter)[1:]:
        if part.startswith(b"--"):
            break
        if part.startswith(b"\r\n"):
            part = part[2:]
        head, _, content = part.partition(b"\r\n\r\n")
        if content.endswith(b"\r\n"):
            content = content[:-2]
        headers = head.decode("utf-8", "replace")
        disposition = next((line for line in headers.split("\r\n")
                            if line.lower().startswith("content-disposition")), "")
        name = re.search(r'\bname="([^"]*)"', disposition)
        if not name:
            continue
        filename = re.search(r'\bfilename="([^"]*)"', disposition)
        if filename is not None:
            if filename.group(1) or content:
                files[name.group(1)] = (filename.group(1), content)
        else:
            fields[name.group(1)] = content.decode("utf-8", "replace")
    return fields, files


# ------------------------------------------------------------------ services (lazy)

def accounts():
    from chalicelib.services import registry

    return registry.accounts()


def documents():
    from chalicelib.services import registry

    return registry.documents()


def workspaces():
    from chalicelib.services import registry

    return registry.workspaces()


def editing():
    from chalicelib.services import registry

    return registry.editing()


def optional_service(name: str):
    """registry.feedback() / registry.sharing(), or None when this build has no such service."""
    from chalicelib.services import registry

    factory = getattr(registry, name, None)
    if factory is None:
        return None
    try:
        return factory()
    except ImportError:
        return None


# ------------------------------------------------------------------ rendering

def url(path: str = "", **params) -> str:
    base = urlparse(config.base_url()).path.rstrip("/") + "/dashboard"
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return base + path + (("?" + query) if query else "")


@functools.lru_cache(maxsize=1)
def environment():
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.globals.update(url=url, pro_features=PRO_FEATURES, max_html_bytes=MAX_HTML_BYTES, limits=limits)
    env.filters.update(size=human_size, when=human_time)
    return env


def human_size(n: Optional[int]) -> str:
    if n is None:
        return ""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024 / 1024:.2f} MiB"


def human_time(value: Optional[str]) -> str:
    if not value:
        return "never"
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return value


def render(page: Page, template: str, status: int = 200, headers: Optional[dict] = None, **context) -> Response:
    context.setdefault("message", MESSAGES.get(page.query.get("m", "")))
    context.setdefault("active", "")
    html = environment().get_template(template).render(
        session=page.session, csrf_token=page.csrf_token(), base_url=config.base_url(), **context)
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

def route(path: str, methods: tuple[str, ...] = ("GET",), signed_in: bool = True) -> Callable:
    """Register a dashboard page: session check, CSRF on POST, errors as pages, security headers."""

    def decorator(view: Callable) -> Callable:
        @functools.wraps(view)
        def handler(**params):
            request = bp.current_request
            page = None
            try:
                page = Page(request)
                if signed_in and page.session is None:
                    if request.method == "GET":
                        return finish(page, request, redirect(url("/sign-in", next=_current_path(request))))
                    if page.session_id:
                        page.clear_cookie(SESSION_COOKIE)
                    return finish(page, request, redirect(url("/sign-in", m="expired")))
                if request.method == "POST" and not page.csrf_ok():
                    raise errors.Forbidden("This form has expired or did not come from this site. "
                                           "Go back, reload the page and try again.")
                response = view(page, **params)
            except Exception as exc:  # noqa: BLE001 - mapped by as_error: a page, never a stack trace
                response = error_page(page, as_error(exc, bp))
            return finish(page, request, response)

        kwargs: dict[str, Any] = {"methods": list(methods)}
        if "POST" in methods:
            kwargs["content_types"] = FORM_TYPES
        bp.route(path, **kwargs)(handler)
        return handler

    return decorator


def _current_path(request) -> str:
    path = (request.context or {}).get("path") or url("")
    query = request.query_params or {}
    return path + ("?" + urlencode(query) if query else "")


# Only plain path characters: no control characters (header injection), no scheme.
_SAFE_PATH = re.compile(r"[A-Za-z0-9/_.~%?=&+-]*")


def _safe_next(value: Optional[str]) -> str:
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


# ------------------------------------------------------------------ static files

@bp.route("/static/{name}", methods=["GET"])
def static_file(name):
    content_type = STATIC_TYPES.get(name)
    if content_type is None:
        return Response("Not found", status_code=404,
                        headers={"Content-Type": "text/plain; charset=utf-8", **SECURITY_HEADERS})
    body = (STATIC / name).read_text(encoding="utf-8")
    return compress(bp.current_request, Response(body, status_code=200, headers={
        "Content-Type": content_type, "Cache-Control": "public, max-age=300", **SECURITY_HEADERS}))


# ------------------------------------------------------------------ accounts

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
        started = accounts().sign_up(form.get("email", ""), form.get("password", ""),
                                     form.get("workspace_name", ""), page.client_ip())
    except errors.DocpubError as exc:
        return render(page, "sign_up.html", status=exc.status, headers=dict(exc.headers), error=exc,
                      form={"email": form.get("email", ""), "workspace_name": form.get("workspace_name", "")})
    _start_session(page, started)
    return redirect(url("/keys", m="signed-up"))


@route("/sign-in", signed_in=False)
def sign_in_form(page: Page):
    if page.session:
        return redirect(_safe_next(page.query.get("next")), 302)
    return render(page, "sign_in.html", form={}, next=_safe_next(page.query.get("next")))


@route("/sign-in", methods=("POST",), signed_in=False)
def sign_in(page: Page):
    form = page.form()
    try:
        started = accounts().sign_in(form.get("email", ""), form.get("password", ""), page.client_ip(),
                                     previous_session_id=page.session_id,
                                     device_cookie=page.cookies.get(DEVICE_COOKIE))
    except errors.DocpubError as exc:
        return render(page, "sign_in.html", status=exc.status, headers=dict(exc.headers), error=exc,
                      form={"email": form.get("email", "")}, next=_safe_next(form.get("next")))
    _start_session(page, started)
    return redirect(_safe_next(form.get("next")))


def _start_session(page: Page, started) -> None:
    page.session_id, page.session = started.session_id, started.session
    page.set_cookie(SESSION_COOKIE, started.session_id, max_age=config.dashboard_session_seconds())
    if started.device_token:  # this browser has signed in to this account (sign-in limits, accounts.py)
        from chalicelib.services.accounts import DEVICE_MAX_AGE_SECONDS

        page.set_cookie(DEVICE_COOKIE, started.device_token, max_age=DEVICE_MAX_AGE_SECONDS)
    if page.anon_id:
        page.clear_cookie(ANON_COOKIE)
        page.anon_id = None


@route("/sign-out", methods=("POST",))
def sign_out(page: Page):
    accounts().sign_out(page.session_id)
    page.session = None
    page.clear_cookie(SESSION_COOKIE)
    return redirect(url("/sign-in", m="signed-out"))


@route("/account")
def account(page: Page):
    return render(page, "account.html", active="account")


@route("/account", methods=("POST",))
def change_password(page: Page):
    form = page.form()
    try:
        if form.get("new_password", "") != form.get("confirm_password", ""):
            raise errors.ValidationFailed.field("confirm_password", "does not match the new password")
        started = accounts().change_password(page.session_id, form.get("current_password", ""),
                                             form.get("new_password", ""), page.client_ip())
    except errors.DocpubError as exc:
        return render(page, "account.html", status=exc.status, headers=dict(exc.headers), error=exc,
                      active="account")
    _start_session(page, started)
    return redirect(url("/account", m="password-changed"))


# ------------------------------------------------------------------ documents

@route("/documents")
def document_list(page: Page):
    query = page.query.get("q", "").strip()[:500]
    cursor = page.query.get("cursor") or None
    listing = documents().list(page.actor, 20, cursor, query or None)
    workspace = workspaces().get_workspace(page.workspace_id)
    return render(page, "documents.html", active="documents", listing=listing, q=query, workspace=workspace,
                  sparklines=_sparklines([d.document_id for d in listing.documents]))


def _sparklines(document_ids: list[str]) -> dict:
    from chalicelib.entrypoints import charts

    service = optional_service("views")
    if service is None:
        return {}
    return {document_id: charts.sparkline(values, days)
            for document_id, (days, values) in service.sparklines(document_ids, 7).items()}


def _views_charts(document) -> Optional[dict]:
    """The document page's views section: per day over 30 days, per version."""
    from chalicelib.entrypoints import charts

    service = optional_service("views")
    if service is None:
        return None
    stats = service.stats_for(document.document_id, [v.version_id for v in document.versions], 30)
    days = [(d.date, d.views) for d in stats.days]
    numbers = {v.version_id: v.number for v in document.versions}
    versions = [(f"v{numbers[v.version_id]}", v.views) for v in stats.versions]
    return {
        "stats": stats,
        "in_window": sum(v for _, v in days),
        "by_version": {v.version_id: v.views for v in stats.versions},
        "days_chart": charts.bar_chart("views-days", "Views per day, last 30 days", days),
        "days_table": charts.data_table("Views per day, last 30 days (UTC)", ("Day", "Views"),
                                        list(reversed(days))),
        "versions_chart": charts.bar_chart("views-versions", "Views per version, all time", versions,
                                           label_every=max(1, len(versions) // 10), height=140),
    }


@route("/upload")
def upload_form(page: Page):
    target = page.query.get("document_id")
    document = documents().get(page.actor, target) if target and _UUID.match(target) else None
    workspace = workspaces().get_workspace(page.workspace_id)
    return render(page, "upload.html", active="upload", document=document, workspace=workspace, form={})


@route("/upload", methods=("POST",))
def upload(page: Page):
    form = page.form()
    target = form.get("document_id") or None
    uploaded = page.file("file")
    try:
        if uploaded is None:
            raise errors.ValidationFailed.field("file", "choose an HTML file to upload")
        result = editing().upload(page.actor, uploaded[1], title=form.get("title"), note=form.get("note"),
                                  document_id=target, description=form.get("description"))
    except errors.DocpubError as exc:
        document = None
        if target and _UUID.match(target):
            try:
                document = documents().get(page.actor, target)
            except errors.NotFound:
                pass
        return render(page, "upload.html", status=exc.status, headers=dict(exc.headers), error=exc,
                      active="upload", document=document,
                      workspace=workspaces().get_workspace(page.workspace_id), form=form)
    return redirect(url(f"/documents/{result.response.document_id}", m="published" if target else "created"))


@route("/documents/{document_id}")
def document_page(page: Page, document_id: str):
    document = _document(page, document_id)
    workspace = workspaces().get_workspace(page.workspace_id)
    sharing = optional_service("sharing")
    failed = None
    if sharing is not None and document.passphrase_protected:
        found = sharing.failed_unlocks(page.actor, document_id)
        from chalicelib.services.context import rfc3339
        failed = {"count": found.count, "exhausted": found.exhausted, "window_seconds": found.window_seconds,
                  "last": rfc3339(found.last_ms) if found.last_ms else None}
    return render(page, "document.html", active="documents", document=document, workspace=workspace,
                  sharing_available=sharing is not None, failed_unlocks=failed,
                  views=_views_charts(document))


def _document(page: Page, document_id: str):
    if not _UUID.match(document_id or ""):
        raise errors.NotFound("No such document in this workspace.")
    return documents().get(page.actor, document_id)


@route("/documents/{document_id}", methods=("POST",))
def update_details(page: Page, document_id: str):
    from chalicelib.models import UpdateDocumentRequest

    form = page.form()
    _document(page, document_id)
    try:
        request = UpdateDocumentRequest.model_validate(
            {"title": form.get("title", ""), "description": form.get("description", "")})
    except Exception as exc:  # pydantic's error, said in the contract's words
        from chalicelib.entrypoints.http import validation_error

        raise validation_error(exc) from None
    documents().update(page.actor, document_id, request)
    return redirect(url(f"/documents/{document_id}", m="saved"))


@route("/documents/{document_id}/restore", methods=("POST",))
def restore(page: Page, document_id: str):
    _document(page, document_id)
    editing().restore_version(page.actor, document_id, _number(page.form().get("number")))
    return redirect(url(f"/documents/{document_id}", m="restored"))


def _number(value: Optional[str]) -> int:
    try:
        number = int(value or "")
    except ValueError:
        raise errors.ValidationFailed.field("number", "must be a version number") from None
    if number < 1:
        raise errors.ValidationFailed.field("number", "must be a version number")
    return number


@route("/documents/{document_id}/diff")
def diff(page: Page, document_id: str):
    document = _document(page, document_id)
    latest = document.version_count
    new = _number(page.query.get("to") or str(latest))
    old = _number(page.query.get("from") or str(max(1, new - 1)))
    pair = editing().compare(page.actor, document_id, old, new)
    return render(page, "diff.html", active="documents", document=document, pair=pair, old=old, new=new)


@route("/documents/{document_id}/edit")
def edit_form(page: Page, document_id: str):
    document = _document(page, document_id)
    workspace = workspaces().get_workspace(page.workspace_id)
    html = None
    if workspace.entitlements.dashboard_editing:
        html = documents().get(page.actor, document_id, include_html=True).html
    return render(page, "edit.html", active="documents", document=document, workspace=workspace, html=html)


@route("/documents/{document_id}/edit", methods=("POST",))
def save_edit(page: Page, document_id: str):
    form = page.form()
    html = form.get("html", "").replace("\r\n", "\n")
    try:
        editing().save_html(page.actor, document_id, html, note=form.get("note"),
                            base_version_id=form.get("base_version_id"))
    except (errors.ValidationFailed, errors.DocumentTooLarge, errors.VersionConflict) as exc:
        document = _document(page, document_id)
        return render(page, "edit.html", status=exc.status, error=exc, active="documents", document=document,
                      workspace=workspaces().get_workspace(page.workspace_id), html=html,
                      note=form.get("note", ""))
    return redirect(url(f"/documents/{document_id}", m="published"))


@route("/documents/{document_id}/delete")
def delete_form(page: Page, document_id: str):
    return render(page, "delete.html", active="documents", document=_document(page, document_id))


@route("/documents/{document_id}/delete", methods=("POST",))
def delete(page: Page, document_id: str):
    _document(page, document_id)
    documents().delete(page.actor, document_id)
    return redirect(url("/documents", m="deleted"))


@route("/documents/{document_id}/link", methods=("POST",))
def share_link(page: Page, document_id: str):
    """Share link settings (enabled, expiry; times are UTC) or a new link (action=rotate)."""
    from chalicelib.models import UpdateDocumentRequest

    document = _document(page, document_id)
    form = page.form()
    sharing = optional_service("sharing")
    if form.get("action") == "rotate" and sharing is not None:
        sharing.rotate(page.actor, document_id)
        return redirect(url(f"/documents/{document_id}", m="link-rotated"))
    expires = (form.get("share_expires_at") or "").strip()
    if expires and re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}", expires):
        expires += ":00Z"  # <input type=datetime-local> has no zone: the page says UTC
    fields = {"share_enabled": form.get("share_enabled") == "on", "share_expires_at": expires or None}
    if expires and expires[:16] == (document.share_expires_at or "")[:16]:
        del fields["share_expires_at"]  # unchanged (the form shows minutes): keep it, even if already past
    try:
        request = UpdateDocumentRequest.model_validate(fields)
    except Exception as exc:  # pydantic's error, said in the contract's words
        from chalicelib.entrypoints.http import validation_error

        raise validation_error(exc) from None
    documents().update(page.actor, document_id, request)
    return redirect(url(f"/documents/{document_id}", m="link-saved"))


@route("/documents/{document_id}/passphrase", methods=("POST",))
def passphrase(page: Page, document_id: str):
    _document(page, document_id)
    sharing = optional_service("sharing")
    if sharing is None:
        raise errors.NotFound("Passphrase links are not available in this installation.")
    form = page.form()
    if form.get("action") == "remove":
        sharing.clear_passphrase(page.actor, document_id)
        return redirect(url(f"/documents/{document_id}", m="passphrase-removed"))
    passphrase = form.get("passphrase", "")
    if not 8 <= len(passphrase) <= 200:
        raise errors.ValidationFailed.field("passphrase", "must be 8 to 200 characters")
    sharing.set_passphrase(page.actor, document_id, passphrase)
    return redirect(url(f"/documents/{document_id}", m="passphrase-set"))


# ------------------------------------------------------------------ API keys

@route("/keys")
def keys(page: Page):
    return _keys_page(page)


def _keys_page(page: Page, status: int = 200, new_key=None, error=None) -> Response:
    workspace = workspaces().get_workspace(page.workspace_id)
    listed = workspaces().list_keys(page.workspace_id)
    active = [k for k in listed if not k["revoked"]]
    return render(page, "keys.html", status=status, active="keys", workspace=workspace, keys=listed,
                  active_count=len(active), new_key=new_key, error=error)


@route("/keys", methods=("POST",))
def create_key(page: Page):
    try:
        created = workspaces().create_key(page.workspace_id, page.form().get("name", ""))
    except errors.DocpubError as exc:
        return _keys_page(page, exc.status, error=exc)
    # Shown once, in this answer only (no redirect, not cached).
    return _keys_page(page, 201, new_key=created)


@route("/keys/{key_id}/revoke", methods=("POST",))
def revoke_key(page: Page, key_id: str):
    workspaces().revoke_key(key_id, page.workspace_id)
    return redirect(url("/keys", m="revoked"))


# ------------------------------------------------------------------ OAuth: consent and connected apps

def oauth():
    from chalicelib.services import registry

    return registry.oauth()


def _authorization(page: Page, params: dict):
    """The validated request, or the answer to give instead (error page or redirect)."""
    from chalicelib.services.oauth import NotRedirectable, RedirectError

    try:
        return oauth().check_authorization(params), None
    except RedirectError as exc:
        if page.request.method == "GET":  # a link anyone can send: no automatic redirect (RFC 9700 4.11.2)
            from chalicelib.entrypoints.oauth import redirect_error_page

            return None, redirect_error_page(exc)
        return None, redirect(exc.location(), 302)
    except NotRedirectable as exc:
        return None, error_page(page, errors.DocpubError(exc.message, status=400))


@route("/oauth/authorize")
def consent(page: Page):
    request, answer = _authorization(page, page.query)
    if request is None:
        return answer
    from chalicelib.services.oauth import SCOPE_DESCRIPTIONS

    workspace = workspaces().get_workspace(page.workspace_id)
    target = urlparse(request.redirect_uri)
    # The form's answer redirects to the client: allow exactly that origin as a form target.
    # CSP has no syntax for an IPv6 literal (Chromium ignores `http://[::1]:port` and then
    # blocks the redirect): such a loopback client is allowed by its scheme alone.
    source = f"{target.scheme}:" if target.netloc.startswith("[") else f"{target.scheme}://{target.netloc}"
    csp = SECURITY_HEADERS["Content-Security-Policy"].replace("form-action 'self'", f"form-action 'self' {source}")
    return render(page, "consent.html", headers={"Content-Security-Policy": csp}, request=request,
                  workspace=workspace, scopes=[(s, SCOPE_DESCRIPTIONS[s]) for s in request.scopes],
                  params=request.params())


@route("/oauth/authorize", methods=("POST",))
def consent_answer(page: Page):
    form = page.form()
    request, answer = _authorization(page, {k: v for k, v in form.items() if k not in ("csrf_token", "decision")})
    if request is None:
        return answer
    location = oauth().decide(request, form.get("decision") == "allow", page.workspace_id, page.session.email)
    return redirect(location, 303)


@route("/apps")
def connected_apps(page: Page):
    from chalicelib.services.oauth import SCOPE_DESCRIPTIONS

    return render(page, "apps.html", active="apps", apps=oauth().connected_apps(page.workspace_id),
                  scope_descriptions=SCOPE_DESCRIPTIONS)


@route("/apps/{grant_id}/revoke", methods=("POST",))
def disconnect_app(page: Page, grant_id: str):
    oauth().disconnect(page.workspace_id, grant_id)
    return redirect(url("/apps", m="disconnected"))


# ------------------------------------------------------------------ feedback inbox

@route("/feedback")
def feedback_inbox(page: Page):
    service = optional_service("feedback")
    status = page.query.get("status") or "open"
    if status not in ("open", "resolved", "all"):
        status = "open"
    document_id = page.query.get("document_id") or None
    if document_id and not _UUID.match(document_id):
        document_id = None
    documents_list = documents().list(page.actor, 100).documents
    if service is None:
        return render(page, "feedback.html", active="feedback", available=False, items=[],
                      documents=documents_list, filter_status=status, document_id=document_id, next_cursor=None)
    listing = service.list(page.actor, document_id=document_id, status=status, limit=20,
                           cursor=page.query.get("cursor") or None)
    details: dict[str, Any] = {}
    items = []
    for item in listing.feedback:
        if item.document_id not in details:
            try:
                details[item.document_id] = documents().get(page.actor, item.document_id)
            except errors.NotFound:
                details[item.document_id] = None
        document = details[item.document_id]
        number = next((v.number for v in document.versions if v.version_id == item.version_id), None) \
            if document else None
        items.append({"feedback": item, "document": document, "version_number": number})
    return render(page, "feedback.html", active="feedback", available=True, items=items,
                  documents=documents_list, filter_status=status, document_id=document_id,
                  next_cursor=listing.next_cursor, back=_current_path(page.request))


@route("/feedback/{feedback_id}/resolve", methods=("POST",))
def resolve_feedback(page: Page, feedback_id: str):
    service = optional_service("feedback")
    if service is None:
        raise errors.NotFound("The feedback inbox is not available in this installation.")
    resolved = page.form().get("resolved", "true") != "false"
    service.resolve(page.actor, feedback_id, resolved=resolved)
    back = _safe_next(page.form().get("back"))
    if not back.startswith(url("/feedback")):
        back = url("/feedback")
    separator = "&" if "?" in back else "?"
    return redirect(back + separator + "m=" + quote("resolved" if resolved else "reopened"))


# ------------------------------------------------------------------ workspace

@route("/workspace")
def workspace_page(page: Page):
    return _workspace_page(page)


def _workspace_page(page: Page, status: int = 200, error=None, form=None) -> Response:
    workspace = workspaces().get_workspace(page.workspace_id)
    active_keys = [k for k in workspaces().list_keys(page.workspace_id) if not k["revoked"]]
    views = optional_service("views")
    return render(page, "workspace.html", status=status, active="workspace", workspace=workspace,
                  key_count=len(active_keys), error=error, form=form or {},
                  most_viewed=views.most_viewed(page.actor) if views else None)


@route("/workspace/branding", methods=("POST",))
def branding(page: Page):
    form = page.form()
    try:
        workspaces().set_branding(page.workspace_id, form.get("brand_name"), form.get("brand_tagline"))
    except errors.DocpubError as exc:
        return _workspace_page(page, exc.status, error=exc, form=form)
    return redirect(url("/workspace", m="branding-saved"))
