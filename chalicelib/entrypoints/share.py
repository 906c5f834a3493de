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

import re
import logging
from typing import Optional
from urllib.parse import urlencode, urlparse

from chalice import Response

from chalicelib import config, errors, rendering
from chalicelib.domain import limits
from chalicelib.entrypoints.blueprints import SharedBlueprint
from chalicelib.entrypoints.http import (
    FORM_TYPE, EncodedResponse, as_error, compress, download_response, handles_errors, json_response, parse_form_or_json,
    client_ip as http_client_ip, parse_cookies, refuse_cross_site, viewer_cookie,
)
from chalicelib.entrypoints.share_pages import (
    CACHE_NO_STORE, CACHE_PAGE, CACHE_PRIVATE, CONTENT_REVISION, GRANT_SEPARATOR, VARY, cache_content,
    cache_page,
    _content_csp, _error_page, frame_script, _generic_preview, _headers, _message_page, _page, _unlock_page,
    _viewer_page, verified_fragment,
)
from chalicelib import wiring as registry
from chalicelib.services.audience import RECIPIENT_COOKIE
from chalicelib.services.sharing import (
    MEMBER_COOKIE, UNLOCK_COOKIE, Locked, MembersOnly, RecipientsOnly, ViewerCookies, WrongPassphrase,
    share_path,
)

log = logging.getLogger("docpub")

# Registered by app.py's app and by the share function's (entrypoints/edge.py).
bp = SharedBlueprint(__name__)

FORM_TYPES = [FORM_TYPE, "application/json"]


# ------------------------------------------------------------------ two sites

CONTENT_ROUTE = "/d/{share_id}/v/{version_id}"
# A bundle's files beside the page, one route per depth (no portable catch-all route).
_PARTS = [f"p{i}" for i in range(1, limits.BUNDLE_MAX_DEPTH + 1)]
FILE_ROUTES = [CONTENT_ROUTE + "".join(f"/{{{name}}}" for name in _PARTS[:depth])
               for depth in range(1, limits.BUNDLE_MAX_DEPTH + 1)]
CONTENT_ROUTES = frozenset([CONTENT_ROUTE, *FILE_ROUTES])


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
    if site == "content" and route not in CONTENT_ROUTES:
        return _message_page("Not found", "Not found", "This address serves shared documents only.", 404,
                             CACHE_PAGE)
    if site == "main" and route in CONTENT_ROUTES:
        from urllib.parse import quote, urlencode

        # From the route's parameters, not requestContext.path (behind API Gateway
        # that carries the stage prefix, which the public address does not have).
        params = request.uri_params or {}
        query = urlencode(request.query_params or {})
        tail = "".join("/" + quote(params[name]) for name in _PARTS if params.get(name))
        location = (f"{config.content_url()}/d/{params.get('share_id', '')}/v/{params.get('version_id', '')}"
                    + tail + (f"?{query}" if query else ""))
        return Response(body="", status_code=302, headers={"Location": location, "Cache-Control": CACHE_PRIVATE,
                                                           "Referrer-Policy": "no-referrer"})
    return None


# ------------------------------------------------------------------ request helpers

def _request():
    return bp.current_request


def _cookie(name: str) -> Optional[str]:
    return parse_cookies(_request().headers.get("cookie")).get(name)


def _open_url(share_id: str, version: Optional[int]) -> str:
    """The dashboard's door to a link for its members (sign-in first when needed)."""
    return f"{urlparse(config.base_url()).path.rstrip('/')}/dashboard/open?" + urlencode(
        {"share": share_id, **({"v": version} if version else {})})


def _recipients_page(share_id: str, version: Optional[int], status: int = 200, message: str = "",
                     email: str = "", extra_headers: Optional[dict] = None) -> Response:
    """A `recipients` link's first step (contract 7f): the viewer's email address. Private."""
    query = f"?v={version}" if version else ""
    return _page("recipient_email.html", "Shared document", status, CACHE_PRIVATE, extra_headers,
                 action=share_path(share_id) + "/recipient/email" + query, message=message, email=email,
                 member_url=_open_url(share_id, version), preview=_generic_preview(share_id))


def _code_page(share_id: str, version: Optional[int], email: str, status: int = 200, message: str = "",
               extra_headers: Optional[dict] = None) -> Response:
    """The second step: the same words whether or not a code was sent to `email`."""
    from chalicelib.domain import limits as limit_table

    query = f"?v={version}" if version else ""
    base = share_path(share_id)
    return _page("recipient_code.html", "Check your email", status, CACHE_PRIVATE, extra_headers, email=email,
                 minutes=limit_table.RECIPIENT_CODE_SECONDS // 60, message=message,
                 code_action=f"{base}/recipient/code{query}", email_action=f"{base}/recipient/email{query}",
                 start_url=base + query, preview=_generic_preview(share_id))


def _members_only(share_id: str, version: Optional[int]) -> Response:
    """A workspace-only link without a member's pass: the sign-in page (when needed),
    then the document: the dashboard checks the membership and hands this browser a
    pass for this link."""
    location = f"{urlparse(config.base_url()).path.rstrip('/')}/dashboard/open?" + urlencode(
        {"share": share_id, **({"v": version} if version else {})})
    return Response(body="", status_code=303, headers={"Location": location, "Cache-Control": CACHE_PRIVATE,
                                                       "X-Robots-Tag": "noindex, nofollow"})


def _viewer() -> ViewerCookies:
    """The unlock cookie and the member pass of this viewer (both scoped to /d/<share>)."""
    cookies = parse_cookies(_request().headers.get("cookie"))
    return ViewerCookies(unlock=cookies.get(UNLOCK_COOKIE), member=cookies.get(MEMBER_COOKIE),
                         recipient=cookies.get(RECIPIENT_COOKIE))


def _version_param() -> Optional[int]:
    """`?version=N` (a link to one version, contract 7f) or `?v=N` (the page's own links):
    None when absent; raises NotFound when not a positive integer. Either pins the page to
    that version: it says when a newer one exists, and live refresh never moves it."""
    query = _request().query_params or {}
    raw = query.get("version") if query.get("version") is not None else query.get("v")
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
    if (_request().query_params or {}).get("download") == "1":
        try:
            return download_response(registry.sharing().download(share_id, version, _viewer()),
                                     {"X-Robots-Tag": "noindex, nofollow", "Referrer-Policy": "no-referrer"})
        except MembersOnly:
            return _members_only(share_id, version)
        except RecipientsOnly:
            return _recipients_page(share_id, version)
        except Locked:
            return _unlock_page(share_id, version)
    page = registry.sharing().page(share_id, version, _viewer())
    if page.members_only:
        return _members_only(share_id, version)
    if page.recipients_only:
        return _recipients_page(share_id, version)
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
    try:
        ref = _open_content(share_id, version_id)
    except Locked:  # (MembersOnly too: a member's pass is needed)
        return _locked_content()
    return _version_page(ref)


def _locked_content() -> Response:
    return Response(body=rendering.page("share/locked_content.html"),
                    status_code=401, headers=_headers(_content_csp(), CACHE_PRIVATE))


def _open_content(share_id: str, version_segment: str):
    """The viewer's access to a version: the grant comes from the unlock cookie, `?t=`,
    or the version segment (`<version_id>~<grant>`)."""
    version_id, _, grant = version_segment.partition(GRANT_SEPARATOR)
    return registry.sharing().open_content(share_id, version_id, _viewer(),
                                           grant or (_request().query_params or {}).get("t"))


def _version_page(ref) -> Response:
    sharing = registry.sharing()
    etag = _etag(ref.version_id)
    cache = CACHE_PRIVATE if ref.protected else cache_content(ref.cache_seconds)
    headers = _headers(_content_csp(), cache, {"ETag": etag})
    if _etag_matches(_request().headers.get("if-none-match"), etag):
        return Response(body="", status_code=304, headers=headers)
    data = sharing.read_content(ref) + frame_script()
    response = compress(_request(), Response(body=data, status_code=200, headers=headers))
    if response.headers.get("Content-Encoding") == "gzip":
        response.headers["ETag"] = etag[:-1] + "-gz\""  # a strong ETag names one encoding
    return response


def share_file(share_id, version_id, **parts):
    """A file of a bundle (or `index.html`: the version's page), typed by extension,
    sandboxed like the page, never sniffed."""
    from urllib.parse import unquote

    from chalicelib.domain import bundles  # a bundle's files only (mimetypes, the archive rules)

    path = "/".join(unquote(parts[name]) for name in _PARTS if parts.get(name))
    try:
        ref = _open_content(share_id, version_id)
    except Locked:
        return _locked_content()
    if path == "index.html":
        return _version_page(ref)
    sharing = registry.sharing()
    found = sharing.open_file(ref, path)
    etag = f"\"{found.sha256}\""
    cache = CACHE_PRIVATE if ref.protected else cache_content(ref.cache_seconds)
    headers = _headers(_content_csp(), cache, {"ETag": etag, "Content-Type": bundles.content_type(path)})
    if _etag_matches(_request().headers.get("if-none-match"), etag):
        return EncodedResponse(body=b"", status_code=304, headers=headers)
    elsewhere = sharing.file_redirect(found, headers["Content-Type"])
    if elsewhere is not None:
        return Response(body="", status_code=302, headers={"Location": elsewhere, "Cache-Control": CACHE_PRIVATE,
                                                           "Referrer-Policy": "no-referrer"})
    data = sharing.read_file(found)
    if not bundles.compressible(path):  # images, fonts, archives: already compressed
        return EncodedResponse(body=data, status_code=200, headers=headers)
    response = compress(_request(), Response(body=data, status_code=200, headers=headers))
    if response.headers.get("Content-Encoding") == "gzip":
        response.headers["ETag"] = etag[:-1] + "-gz\""
    return response


for _route in FILE_ROUTES:
    bp.route(_route, methods=["GET"])(_html_view(share_file))


@bp.route("/d/{share_id}/card.png", methods=["GET"])
@_html_view
def share_card(share_id):
    """The link's 1200x630 preview card (public links only; 404 otherwise)."""
    key, data, seconds = registry.sharing().card(share_id)
    etag = f"\"card-{key}\""
    headers: dict[str, str | list[str]] = {
        "Content-Type": "image/png", "Cache-Control": cache_content(seconds), "ETag": etag,
        "X-Content-Type-Options": "nosniff", "X-Robots-Tag": "noindex, nofollow",
        "Content-Security-Policy": "default-src 'none'; sandbox"}
    if _etag_matches(_request().headers.get("if-none-match"), etag):
        return EncodedResponse(body=b"", status_code=304, headers=headers)
    return EncodedResponse(body=data, status_code=200, headers=headers)


@bp.route("/d/{share_id}/unlock", methods=["POST"], content_types=FORM_TYPES)
@_html_view
def share_unlock(share_id):
    from chalicelib.models import ShareUnlockForm  # pydantic only for the routes that parse a body

    refuse_cross_site(_request())
    version = _version_param()
    try:
        form = parse_form_or_json(_request(), ShareUnlockForm)
        passphrase = form.passphrase
    except errors.DocpubError:
        passphrase = ""
    try:
        unlocked = registry.sharing().unlock(share_id, passphrase, client_ip(), _cookie(UNLOCK_COOKIE))
    except WrongPassphrase as exc:
        return _unlock_page(share_id, version, 401, exc.message)
    except errors.RateLimited as exc:
        return _unlock_page(share_id, version, 429, exc.message, dict(exc.headers))
    return _back_to_link(share_id, version, unlocked)


def _back_to_link(share_id: str, version: Optional[int], granted) -> Response:
    """303 back to the link with the viewer cookie `granted` (an unlock or a recipient pass):
    that link only, HttpOnly, SameSite=Lax, Secure on https."""
    cookie = viewer_cookie(granted.cookie_name, granted.cookie_value, granted.path, granted.max_age)
    location = share_path(share_id) + (f"?v={version}" if version else "")
    return Response(body="", status_code=303,
                    headers={"Location": location, "Set-Cookie": cookie, "Cache-Control": CACHE_PRIVATE,
                             "Referrer-Policy": "no-referrer", "X-Robots-Tag": "noindex, nofollow"})


@bp.route("/d/{share_id}/recipient/email", methods=["POST"], content_types=FORM_TYPES)
@_html_view
def share_recipient_email(share_id):
    """The email step of a `recipients` link: the code page whatever the address (a code is
    mailed only to one that may open it); 422 for what is not an address, 429 past the limits."""
    from chalicelib.models import RecipientEmailForm

    refuse_cross_site(_request())
    version = _version_param()
    try:
        email = parse_form_or_json(_request(), RecipientEmailForm).email
    except errors.DocpubError:
        email = ""
    try:
        email = registry.recipients().request_code(share_id, email, client_ip())
    except errors.ValidationFailed:
        return _recipients_page(share_id, version, 422, "Enter an email address, like name@example.com.",
                                email[:254])
    except errors.RateLimited as exc:
        return _recipients_page(share_id, version, 429, exc.message, email[:254], dict(exc.headers))
    return _code_page(share_id, version, email)


@bp.route("/d/{share_id}/recipient/code", methods=["POST"], content_types=FORM_TYPES)
@_html_view
def share_recipient_code(share_id):
    """The code step: right → 303 back to the link with the viewer cookie (30 days); wrong →
    401 with the tries left; a spent or expired code → 401 offering a new one."""
    from chalicelib.models import RecipientCodeForm
    from chalicelib.services.recipients import WrongCode

    refuse_cross_site(_request())
    version = _version_param()
    try:
        form = parse_form_or_json(_request(), RecipientCodeForm)
    except errors.DocpubError:
        form = RecipientCodeForm()
    try:
        granted = registry.recipients().verify_code(share_id, form.email, form.code)
    except errors.ValidationFailed:
        return _recipients_page(share_id, version, 422, "Enter an email address, like name@example.com.")
    except WrongCode as exc:
        return _code_page(share_id, version, form.email.strip().lower()[:254], 401, exc.message)
    return _back_to_link(share_id, version, granted)


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
    registry.views().record(share_id, _version_param(), _viewer(), client_ip(),
                            request.headers.get("user-agent"), request.headers)
    return Response(body="", status_code=204, headers={})


@bp.route("/d/{share_id}/feedback", methods=["POST"], content_types=FORM_TYPES)
@_private
@handles_errors(bp)
def share_feedback(share_id):
    """JSON API: 201 {"feedback_id"} or the contract's error body."""
    from chalicelib.models import FeedbackSubmission

    request = _request()
    refuse_cross_site(request)
    version = _version_param()
    submission = parse_form_or_json(request, FeedbackSubmission)
    created = registry.feedback().submit(share_id, submission, client_ip(), _viewer(), version)
    return json_response(created, 201)



@bp.route("/d/{share_id}/feedback/{feedback_id}/replies", methods=["POST"], content_types=FORM_TYPES)
@_private
@handles_errors(bp)
def share_reply(share_id, feedback_id):
    """A viewer's reply to a thread: 201 Reply or the contract's error body; the same
    limits as feedback, counted in the same per-address budget."""
    from chalicelib.models import ViewerReplyRequest

    request = _request()
    refuse_cross_site(request)
    reply = parse_form_or_json(request, ViewerReplyRequest)
    created = registry.feedback().viewer_reply(share_id, feedback_id, reply, client_ip(), _viewer())
    return json_response(created, 201)


# ------------------------------------------------------------------ reviews (contract 7e)

@bp.route("/d/{share_id}/review", methods=["GET"])
@_private
@handles_errors(bp)
def share_review_panel(share_id):
    """What the page's review panel shows: who reviews through this browser (a member with a
    pass for this link, from /dashboard/open), or null, and the review state. Private."""
    reviewer, state, version = registry.reviews().share_reviewer(share_id, _viewer(), _version_param())
    return json_response({"reviewer": reviewer, "review_state": state, "version_number": version})


@bp.route("/d/{share_id}/reviews", methods=["POST"], content_types=FORM_TYPES)
@_private
@handles_errors(bp)
def share_review(share_id):
    """A signed-in member approves, requests changes or comments: 201 Review, or the
    contract's error body (401 without a member's pass for this link)."""
    from chalicelib.models import ReviewSubmission, ShareReview

    request = _request()
    refuse_cross_site(request)
    posted = parse_form_or_json(request, ShareReview)
    review = registry.reviews().submit_on_share(
        share_id, _viewer(), _version_param(), ReviewSubmission(decision=posted.decision, message=posted.message))
    return json_response(review, 201)


# ------------------------------------------------------------------ live pages and threads (contract 7c)

def _public_json(body: dict, page_cache: str, protected: bool) -> Response:
    response = json_response(body)
    response.headers.update({"Cache-Control": CACHE_PRIVATE if protected else page_cache,
                             "X-Robots-Tag": "noindex, nofollow", "X-Content-Type-Options": "nosniff"})
    if not protected:
        response.headers["Vary"] = VARY
    return compress(_request(), response)


@bp.route("/d/{share_id}/live", methods=["GET"])
@handles_errors(bp)
def share_live(share_id):
    """What an open page polls: the latest version and the time of the last comment or
    reply. Never counts a view; one small object every viewer shares: a shared cache
    (CloudFront) answers it for LIVE_EDGE_SECONDS, so the origin sees one request per
    edge per interval whatever the number of viewers."""
    live = registry.sharing().live(share_id, _viewer())
    seconds = min(limits.LIVE_EDGE_SECONDS, live.cache_seconds)
    return _public_json({"version": live.version_number, "version_id": live.version_id,
                         "activity": live.activity_ms}, cache_page(seconds), live.protected)


_MARK = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


@bp.route("/d/{share_id}/threads/{mark}", methods=["GET"])
@handles_errors(bp)
def share_threads(share_id, mark):
    """The open threads (with replies) the page lists and highlights. `mark` is the
    activity time from /live (a new comment is a new address, so a cached answer is
    never older than the mark asked for) or any fresh token after the viewer's own post."""
    if not _MARK.match(mark or ""):
        raise errors.NotFound("No such page.")
    from chalicelib.services.sharing import protected as is_protected

    doc, threads = registry.feedback().threads(share_id, _viewer())
    protected = is_protected(doc)  # passphrase, members or recipients only: never in a shared cache
    seconds = registry.sharing().cache_seconds(doc)
    return _public_json({"threads": [{**t.feedback.model_dump(mode="json"), "version_number": t.version_number}
                                     for t in threads]},
                        cache_page(seconds), protected)


# ------------------------------------------------------------------ signed versions (contract 7g)
@bp.route("/d/{share_id}/verified", methods=["GET"])
def share_verified(share_id):
    """The page's "Verified" line (templates/share/verified.html), which page.js puts under the
    title: who published the shown version and when, and whether its stored content and
    signature still match the statement. Cached as the page is (a version's verdict never
    changes); empty for a version without provenance, and never an error page: a line that
    cannot be shown is left out (the log says why)."""
    request = _request()
    cache = CACHE_PRIVATE
    body = ""
    try:
        line, protected, seconds = registry.provenance().share_line(share_id, _version_param(), _viewer())
        if not protected:
            cache = cache_page(seconds)
        if line is not None:
            body = verified_fragment(line, share_id, _version_param())
    except Exception as exc:  # noqa: BLE001 - no line rather than an error in the page
        as_error(exc, bp)  # logs what was unexpected
    return compress(request, Response(body=body, status_code=200, headers=_headers(
        "default-src 'none'; frame-ancestors 'none'", cache, {"X-Frame-Options": "DENY"})))


@bp.route("/d/{share_id}/provenance", methods=["GET"])
@_private
@handles_errors(bp)
def share_provenance(share_id):
    """The shown version's (`?v=N`, else the latest) signed statement, under the same access
    as viewing it: what `docpub verify SHARE_URL` checks (docs/provenance.md)."""
    return json_response(registry.provenance().for_share(share_id, _version_param(), _viewer()))
