"""Share links (`/d/<share_id>`): public HTML pages over the share and feedback services.

- `GET /d/<id>[?v=N]`: a small wrapper page (title, version, feedback form, the
  "Published with Docpub" mark or the Pro workspace's brand) framing the document
  in a sandboxed iframe. Protected and not unlocked: only an unlock form.
- `GET /d/<id>/v/<version_id>`: the version's HTML itself, immutable, served with
  `Content-Security-Policy: sandbox …` (never allow-same-origin) so it runs in an
  opaque origin even when opened directly: it can never read the service's
  cookies, call its API with them, or script the wrapper or the dashboard.
- `POST /d/<id>/unlock` (form field `passphrase`) and `POST /d/<id>/feedback`
  (JSON or form; answers JSON, the contract's error body on failure).

Caching (docs/sharing.md, "Withdrawn means withdrawn at the edge"): a public
answer may be kept by any cache at most 60 s and never past the link's
`share_expires_at`: content is `public, max-age=N, s-maxage=N` with a strong
ETag (a revalidation answers 304 without reading S3), the wrapper
`public, max-age=0, s-maxage=N` (browsers always ask again), N = min(60, seconds
left); anything of a protected document `private, no-store`. Every withdrawal
also asks the CDN to drop `/d/<share_id>*` (services/cdn.py).
"""
from __future__ import annotations

import base64
import hashlib
import html
import re
import logging
from typing import Optional

from chalice import Blueprint, Response

from chalicelib import config, errors
from chalicelib.domain import links
from chalicelib.entrypoints.http import (
    FORM_TYPE, as_error, compress, handles_errors, json_response, parse_form_or_json,
    client_ip as http_client_ip, parse_cookies, refuse_cross_site,
)
from chalicelib.models import FeedbackSubmission, RequestModel, ViewerReplyRequest
from chalicelib.services import registry
from chalicelib.services.sharing import Locked, SharePage, UNLOCK_COOKIE, WrongPassphrase, share_path

log = logging.getLogger("docpub")

bp = Blueprint(__name__)

FORM_TYPES = [FORM_TYPE, "application/json"]
HTML_TYPE = "text/html; charset=utf-8"
SANDBOX = "allow-scripts allow-forms allow-popups allow-modals"
# A shared cache (CloudFront) keeps a public answer at most EDGE_TTL_SECONDS and never
# past the link's expiry: that bounds how long a withdrawn link can still be served.
CACHE_PAGE = f"public, max-age=0, s-maxage={links.EDGE_TTL_SECONDS}"
CACHE_PRIVATE = "private, no-store"
CACHE_NO_STORE = "no-store"  # the view beacon: never kept by any cache
# Public answers differ by encoding (gzip or not): say so on every one, 304s included.
VARY = "Accept-Encoding"


def cache_page(seconds: int) -> str:
    """The wrapper (the latest pointer): browsers revalidate every time, so a new
    version shows at once without a CDN and within `seconds` through one."""
    return f"public, max-age=0, s-maxage={seconds}"


def cache_content(seconds: int) -> str:
    """A version's content: the bytes never change, but access to them can be
    withdrawn, so no cache keeps them longer than `seconds` without asking (a
    revalidation is a 304 answered from DynamoDB alone)."""
    return f"public, max-age={seconds}, s-maxage={seconds}"
# Bump when the bytes served for a version change (e.g. the injected script).
CONTENT_REVISION = "1"

# Injected at the end of every served version: tells the wrapper page what the
# viewer selected, so the feedback form can quote it. The frame is an opaque
# origin, so postMessage is the only way out; the wrapper checks event.source.
SELECTION_SCRIPT = (
    "<script>/* docpub: share the selection with the feedback button */(function(){"
    "if(window.parent===window)return;var t;"
    "document.addEventListener('selectionchange',function(){clearTimeout(t);t=setTimeout(function(){"
    "var s=String(window.getSelection()||'').slice(0,1000);"
    "try{window.parent.postMessage({type:'docpub:selection',text:s},'*');}catch(e){}},100);});"
    "})();</script>"
)

PAGE_CSS = (
    "*{box-sizing:border-box}html,body{height:100%;margin:0}"
    "body{display:flex;flex-direction:column;font:15px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;"
    "color:#1d2330;background:#f6f7f9}"
    ".bar{display:flex;align-items:center;gap:12px;padding:8px 16px;background:#fff;border-bottom:1px solid #dde1e7}"
    ".bar h1{font-size:16px;margin:0;flex:1;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}"
    ".meta{color:#5b6475;font-size:13px}.meta a{color:#2856c7}"
    ".doc{flex:1;width:100%;border:0;background:#fff}"
    ".foot{display:flex;justify-content:space-between;align-items:center;padding:6px 16px;font-size:12px;"
    "color:#5b6475;background:#fff;border-top:1px solid #dde1e7}"
    ".foot a{color:#5b6475}.brand b{color:#1d2330}#fb-open{margin-left:auto}"
    "button{font:inherit;cursor:pointer;border-radius:6px;border:1px solid #2856c7;padding:6px 14px}"
    ".primary{background:#2856c7;color:#fff}.plain{background:#fff;color:#2856c7}"
    ".panel{position:fixed;right:16px;bottom:48px;width:min(380px,calc(100% - 32px));background:#fff;"
    "border:1px solid #dde1e7;border-radius:10px;box-shadow:0 8px 30px rgba(0,0,0,.15);padding:16px}"
    ".panel h2{font-size:15px;margin:0 0 8px}"
    "label{display:block;font-size:13px;margin:8px 0 2px;color:#3a4254}"
    "textarea,input{width:100%;font:inherit;padding:6px 8px;border:1px solid #c5cbd6;border-radius:6px}"
    ".actions{display:flex;gap:8px;justify-content:flex-end;margin-top:10px}"
    ".status{font-size:13px;min-height:1em;margin:8px 0 0}"
    ".center{margin:12vh auto;max-width:380px;background:#fff;border:1px solid #dde1e7;border-radius:10px;"
    "padding:24px}.center h1{font-size:18px;margin:0 0 8px}.error{color:#b3261e}"
)

PAGE_SCRIPT = (
    "(function(){"
    "var frame=document.getElementById('doc'),panel=document.getElementById('fb'),"
    "form=document.getElementById('fb-form'),status=document.getElementById('fb-status'),"
    "open=document.getElementById('fb-open'),selection='';"
    "window.addEventListener('message',function(e){"
    "if(!frame||e.source!==frame.contentWindow)return;var d=e.data;"
    "if(d&&d.type==='docpub:selection'&&typeof d.text==='string'){selection=d.text.slice(0,1000);"
    "open.textContent=selection.trim()?'Feedback on selection':'Feedback';}});"
    "open.addEventListener('click',function(){"
    "if(selection.trim()){form.elements.quote.value=selection;}"
    "panel.hidden=false;status.textContent='';form.elements.message.focus();});"
    "document.getElementById('fb-cancel').addEventListener('click',function(){panel.hidden=true;});"
    "form.addEventListener('submit',function(e){e.preventDefault();"
    "var body={message:form.elements.message.value};"
    "if(form.elements.name.value.trim()){body.name=form.elements.name.value;}"
    "if(form.elements.quote.value.trim()){body.quote=form.elements.quote.value;}"
    "status.textContent='Sending\\u2026';"
    "fetch(form.action,{method:'POST',credentials:'same-origin',"
    "headers:{'Content-Type':'application/json','Accept':'application/json'},body:JSON.stringify(body)})"
    ".then(function(r){return r.json().then(function(j){return [r.status,j];});})"
    ".then(function(res){if(res[0]===201){form.reset();selection='';open.textContent='Feedback';"
    "status.textContent='Thank you! Your feedback was sent.';status.setAttribute('data-feedback-id',"
    "res[1].feedback_id);}else{status.textContent=(res[1].error&&res[1].error.message)||"
    "'Could not send your feedback.';}})"
    ".catch(function(){status.textContent='Could not send your feedback; check your connection.';});});"
    "})();"
    # Views: one beacon per page load, sent once the page is visible (a prerendered
    # or background page waits until shown; a page restored from the back/forward
    # cache is not a new load). No cookie is set; the server drops bots.
    "(function(){"
    "var frame=document.getElementById('doc'),url=frame&&frame.getAttribute('data-view'),sent=false;"
    "if(!url)return;"
    "function send(){if(sent||document.prerendering||document.visibilityState!=='visible')return;sent=true;"
    "try{if(!(navigator.sendBeacon&&navigator.sendBeacon(url))){"
    "fetch(url,{method:'POST',credentials:'same-origin',keepalive:true});}}catch(e){}}"
    "document.addEventListener('visibilitychange',send);"
    "document.addEventListener('prerenderingchange',send);"
    "send();"
    "})();"
)


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


# Inline script and style are allowed by hash only (stable, so the page stays cacheable).
def _page_csp() -> str:
    frame_src = _origin(config.content_url()) or "'self'"
    return ("default-src 'none'; script-src " + _csp_hash(PAGE_SCRIPT) + "; style-src " + _csp_hash(PAGE_CSS)
            + f"; frame-src {frame_src}; connect-src 'self'; form-action 'self'; base-uri 'none'; "
            "img-src 'self' data:; frame-ancestors 'none'")


def _content_csp() -> str:
    """Sandboxed (an opaque origin) wherever it is served; framed only by the share page."""
    ancestors = _origin(config.base_url()) if config.content_url() else "'self'"
    return f"sandbox {SANDBOX}; frame-ancestors {ancestors}"


def _origin(url: str) -> str:
    from urllib.parse import urlsplit

    if not url:
        return ""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


# ------------------------------------------------------------------ two sites

CONTENT_ROUTE = "/d/{share_id}/v/{version_id}"


def site_of(request) -> str:
    """"content" when the request came to DOCPUB_CONTENT_URL's origin, else "main".
    Behind CloudFront each distribution names its site in the X-Docpub-Site origin
    header (a viewer cannot set it: CloudFront overwrites it, and without the origin
    secret the request is refused anyway); elsewhere the Host header decides."""
    from urllib.parse import urlsplit

    content = config.content_url()
    if not content:
        return "main"
    named = (request.headers.get("x-docpub-site") or "").lower()
    if named in ("content", "main") and config.origin_secret():
        return named
    host = (request.headers.get("host") or "").lower()
    return "content" if host == urlsplit(content).netloc.lower() else "main"


def separate_sites(request) -> Optional[Response]:
    """With a content origin: it serves document content only (anything else is
    404 there), and the main origin no longer serves content (it redirects an old
    content URL to the content origin, where the same rules apply)."""
    if not config.content_url() or request is None:
        return None
    route = (request.context or {}).get("resourcePath")
    site = site_of(request)
    if site == "content" and route != CONTENT_ROUTE:
        return _page("<main class=\"center\"><h1>Not found</h1><p>This address serves shared documents "
                     "only.</p></main>", "Not found", 404, CACHE_PAGE)
    if site == "main" and route == CONTENT_ROUTE:
        from urllib.parse import urlencode

        # From the route's parameters, not requestContext.path (behind API Gateway
        # that carries the stage prefix, which the public address does not have).
        params = request.uri_params or {}
        query = urlencode(request.query_params or {})
        location = (f"{config.content_url()}/d/{params.get('share_id', '')}/v/{params.get('version_id', '')}"
                    + (f"?{query}" if query else ""))
        return Response(body="", status_code=302, headers={"Location": location, "Cache-Control": CACHE_PRIVATE,
                                                           "Referrer-Policy": "no-referrer"})
    return None


def _headers(csp: str, cache: str, extra: Optional[dict] = None) -> dict:
    headers = {"Content-Type": HTML_TYPE, "Content-Security-Policy": csp, "Cache-Control": cache,
               "X-Robots-Tag": "noindex, nofollow", "Referrer-Policy": "no-referrer",
               "X-Content-Type-Options": "nosniff"}
    if cache.startswith("public"):
        headers["Vary"] = VARY
    return {**headers, **(extra or {})}


def _page(body_html: str, title: str, status: int = 200, cache: str = CACHE_PRIVATE,
          extra_headers: Optional[dict] = None) -> Response:
    document = (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                f"<meta name=\"robots\" content=\"noindex\"><title>{html.escape(title)}</title>"
                f"<style>{PAGE_CSS}</style></head><body>{body_html}</body></html>")
    return Response(body=document, status_code=status,
                    headers=_headers(_page_csp(), cache, {"X-Frame-Options": "DENY", **(extra_headers or {})}))


def _not_found_page() -> Response:
    return _page("<main class=\"center\"><h1>Not found</h1><p>There is no document at this link. "
                 "It may have been deleted, or the link is mistyped.</p></main>",
                 "Not found", 404, CACHE_PAGE)


def _expired_page() -> Response:
    return _page("<main class=\"center\"><h1>This link has expired</h1><p>The person who shared this "
                 "document set it to stop working after a date that has passed. Ask them for a new "
                 "link if you still need it.</p></main>",
                 "Link expired", 410, CACHE_PAGE)


def _error_page(error: errors.DocpubError) -> Response:
    """The share surface's answer for any error (as_error maps exceptions to errors)."""
    if isinstance(error, errors.NotFound):
        return _not_found_page()
    if isinstance(error, errors.Gone):
        return _expired_page()
    body = f"<main class=\"center\"><h1>Something went wrong</h1><p>{html.escape(error.message)}</p></main>"
    return _page(body, "Error", error.status, CACHE_PRIVATE, dict(error.headers))


def _unlock_page(share_id: str, version: Optional[int], status: int = 200, message: str = "",
                 extra_headers: Optional[dict] = None) -> Response:
    action = share_path(share_id) + "/unlock" + (f"?v={version}" if version else "")
    note = f"<p class=\"error\" role=\"alert\">{html.escape(message)}</p>" if message else ""
    body = (f"<main class=\"center\"><h1>This document is protected</h1>"
            f"<p>Enter the passphrase you were given to read it.</p>{note}"
            f"<form method=\"post\" action=\"{html.escape(action)}\">"
            f"<label for=\"passphrase\">Passphrase</label>"
            f"<input id=\"passphrase\" name=\"passphrase\" type=\"password\" required maxlength=\"200\" "
            f"autocomplete=\"current-password\" autofocus>"
            f"<div class=\"actions\"><button class=\"primary\" type=\"submit\">Unlock</button></div>"
            f"</form></main>")
    return _page(body, "Protected document", status, CACHE_PRIVATE, extra_headers)


def _mark(page: SharePage) -> str:
    branding = page.branding
    if branding is None:
        return ""
    if branding.docpub_mark:
        return "<span class=\"mark\">Published with <b>Docpub</b></span>"
    if branding.brand_name:
        tagline = f" &middot; {html.escape(branding.brand_tagline)}" if branding.brand_tagline else ""
        return f"<span class=\"brand\"><b>{html.escape(branding.brand_name)}</b>{tagline}</span>"
    return ""


def _viewer_page(page: SharePage) -> Response:
    base = share_path(page.share_id)
    title = html.escape(page.title)
    links = []
    if page.version_number > 1:
        links.append(f"<a href=\"{base}?v={page.version_number - 1}\">previous</a>")
    if not page.latest:
        links.append(f"<a href=\"{base}\">latest</a>")
    meta = (f"Version {page.version_number} of {page.version_count}"
            + ("".join(f" &middot; {link}" for link in links)))
    content_src = f"{config.content_url()}{base}/v/{html.escape(page.version_id)}"
    if config.content_url() and page.content_token:  # the content origin never sees the unlock cookie
        content_src += f"?t={html.escape(page.content_token)}"
    feedback_action = f"{base}/feedback?v={page.version_number}"
    body = (
        f"<header class=\"bar\"><h1>{title}</h1><span class=\"meta\">{meta}</span></header>"
        f"<iframe id=\"doc\" class=\"doc\" title=\"{title}\" src=\"{content_src}\" sandbox=\"{SANDBOX}\" "
        f"referrerpolicy=\"no-referrer\" data-view=\"{base}/view?v={page.version_number}\"></iframe>"
        f"<footer class=\"foot\">{_mark(page)}"
        f"<button id=\"fb-open\" class=\"plain\" type=\"button\">Feedback</button></footer>"
        f"<section id=\"fb\" class=\"panel\" hidden aria-label=\"Send feedback\"><h2>Send feedback</h2>"
        f"<form id=\"fb-form\" method=\"post\" action=\"{feedback_action}\">"
        f"<label for=\"fb-message\">Message</label>"
        f"<textarea id=\"fb-message\" name=\"message\" rows=\"4\" required maxlength=\"5000\"></textarea>"
        f"<label for=\"fb-quote\">Quoted text (select text in the document first)</label>"
        f"<textarea id=\"fb-quote\" name=\"quote\" rows=\"2\" maxlength=\"1000\"></textarea>"
        f"<label for=\"fb-name\">Your name (optional)</label>"
        f"<input id=\"fb-name\" name=\"name\" maxlength=\"100\" autocomplete=\"name\">"
        f"<div class=\"actions\"><button id=\"fb-cancel\" class=\"plain\" type=\"button\">Close</button>"
        f"<button class=\"primary\" type=\"submit\">Send</button></div></form>"
        f"<p id=\"fb-status\" class=\"status\" role=\"status\"></p></section>"
        f"<script>{PAGE_SCRIPT}</script>"
    )
    cache = CACHE_PRIVATE if page.protected else cache_page(page.cache_seconds)
    return _page(body, page.title, 200, cache)


# ------------------------------------------------------------------ request helpers

def _request():
    return bp.current_request


def _cookie(name: str) -> Optional[str]:
    return parse_cookies(_request().headers.get("cookie")).get(name)


def _version_param() -> Optional[int]:
    """`?v=N`: None when absent; raises NotFound when not a positive integer."""
    raw = (_request().query_params or {}).get("v")
    if raw is None or raw == "":
        return None
    # ASCII digits only: str.isdigit() also accepts "²", which int() refuses.
    if not re.fullmatch(r"[0-9]{1,9}", raw) or int(raw) < 1:
        raise errors.NotFound("No such version.")
    return int(raw)


def client_ip() -> str:
    return http_client_ip(_request())


def _html_view(view):
    """Share pages answer HTML, whatever goes wrong (never a stack trace)."""
    import functools

    @functools.wraps(view)
    def wrapper(*args, **kwargs):
        request = _request()
        try:
            response = view(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - mapped by as_error, never a stack trace
            response = _error_page(as_error(exc, bp))
        return compress(request, response)

    return wrapper


# ------------------------------------------------------------------ routes

@bp.route("/d/{share_id}", methods=["GET"])
@_html_view
def share_page(share_id):
    version = _version_param()
    page = registry.sharing().page(share_id, version, _cookie(UNLOCK_COOKIE))
    if page.locked:
        return _unlock_page(share_id, version)
    return _viewer_page(page)


def _etag(version_id: str) -> str:
    return f"\"{version_id}.{CONTENT_REVISION}\""


def _etag_matches(header: Optional[str], etag: str) -> bool:
    if not header:
        return False
    tags = {t.strip().removeprefix("W/") for t in header.split(",")}
    gz = etag[:-1] + "-gz\""
    return "*" in tags or etag in tags or gz in tags


@bp.route("/d/{share_id}/v/{version_id}", methods=["GET"])
@_html_view
def share_content(share_id, version_id):
    sharing = registry.sharing()
    try:
        ref = sharing.open_content(share_id, version_id, _cookie(UNLOCK_COOKIE),
                                   (_request().query_params or {}).get("t"))
    except Locked:
        return Response(body="<!doctype html><meta charset=utf-8><title>Locked</title>"
                             "<p>This document is protected by a passphrase.</p>",
                        status_code=401, headers=_headers(_content_csp(), CACHE_PRIVATE))
    etag = _etag(ref.version_id)
    cache = CACHE_PRIVATE if ref.protected else cache_content(ref.cache_seconds)
    headers = _headers(_content_csp(), cache, {"ETag": etag})
    if _etag_matches(_request().headers.get("if-none-match"), etag):
        return Response(body="", status_code=304, headers=headers)
    data = sharing.read_content(ref) + SELECTION_SCRIPT.encode("utf-8")
    response = compress(_request(), Response(body=data, status_code=200, headers=headers))
    if response.headers.get("Content-Encoding") == "gzip":
        response.headers["ETag"] = etag[:-1] + "-gz\""  # a strong ETag names one encoding
    return response


class _UnlockForm(RequestModel):
    passphrase: str = ""


@bp.route("/d/{share_id}/unlock", methods=["POST"], content_types=FORM_TYPES)
@_html_view
def share_unlock(share_id):
    refuse_cross_site(_request())
    version = _version_param()
    try:
        form = parse_form_or_json(_request(), _UnlockForm)
        passphrase = form.passphrase
    except errors.DocpubError:
        passphrase = ""
    try:
        unlocked = registry.sharing().unlock(share_id, passphrase, client_ip())
    except WrongPassphrase as exc:
        return _unlock_page(share_id, version, 401, exc.message)
    except errors.RateLimited as exc:
        return _unlock_page(share_id, version, 429, exc.message, dict(exc.headers))
    secure = "; Secure" if config.base_url().startswith("https://") else ""
    cookie = (f"{unlocked.cookie_name}={unlocked.cookie_value}; Path={unlocked.path}; "
              f"Max-Age={unlocked.max_age}; HttpOnly; SameSite=Lax{secure}")
    location = share_path(share_id) + (f"?v={version}" if version else "")
    return Response(body="", status_code=303,
                    headers={"Location": location, "Set-Cookie": cookie, "Cache-Control": CACHE_PRIVATE,
                             "Referrer-Policy": "no-referrer", "X-Robots-Tag": "noindex, nofollow"})


def _cache_headers(cache: str):
    """Answers of viewer posts (beacon, feedback), success or error, are never
    indexed and never kept by a shared cache."""
    import functools

    def decorator(view):
        @functools.wraps(view)
        def wrapper(*args, **kwargs):
            response = view(*args, **kwargs)
            response.headers.update({"Cache-Control": cache, "X-Robots-Tag": "noindex, nofollow",
                                     "X-Content-Type-Options": "nosniff"})
            return response

        return wrapper

    return decorator


_private = _cache_headers(CACHE_PRIVATE)


@bp.route("/d/{share_id}/view", methods=["POST"], content_types=["*/*"])
@_cache_headers(CACHE_NO_STORE)
@handles_errors(bp)
def share_view(share_id):
    """The wrapper page's view beacon: 204 whether counted or not (bots and
    prefetches are dropped silently), 404/401 like the page, 429 past the
    per-address limit. Never cached; sets no cookie."""
    request = _request()
    refuse_cross_site(request)
    registry.views().record(share_id, _version_param(), _cookie(UNLOCK_COOKIE), client_ip(),
                            request.headers.get("user-agent"), request.headers)
    return Response(body="", status_code=204, headers={})


@bp.route("/d/{share_id}/feedback", methods=["POST"], content_types=FORM_TYPES)
@_private
@handles_errors(bp)
def share_feedback(share_id):
    """JSON API: 201 {"feedback_id"} or the contract's error body."""
    request = _request()
    refuse_cross_site(request)
    version = _version_param()
    submission = parse_form_or_json(request, FeedbackSubmission)
    created = registry.feedback().submit(share_id, submission, client_ip(), _cookie(UNLOCK_COOKIE), version)
    return json_response(created, 201)



@bp.route("/d/{share_id}/feedback/{feedback_id}/replies", methods=["POST"], content_types=FORM_TYPES)
@_private
@handles_errors(bp)
def share_reply(share_id, feedback_id):
    """A viewer's reply to a thread: 201 Reply or the contract's error body; the same
    limits as feedback, counted in the same per-address budget."""
    request = _request()
    refuse_cross_site(request)
    reply = parse_form_or_json(request, ViewerReplyRequest)
    created = registry.feedback().viewer_reply(share_id, feedback_id, reply, client_ip(), _cookie(UNLOCK_COOKIE))
    return json_response(created, 201)
