"""How a share link's pages look (`/d/<share_id>`): the viewer page, the unlock and
message pages, their headers (CSP by hash, caching, previews for link unfurls) and
the static copy of a public link (issue 38). It asks no service of wiring: the
composition root hands `static_objects` to services/static_pages.py (wiring.py
imports this, and share.py, the routes, imports wiring: one module held both, an
import circle). The helpers keep the names they had in share.py, which imports them.
"""
from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any, Iterator, Optional
from urllib.parse import urlencode, urlparse

from chalice import Response

from chalicelib import config, errors, rendering
from chalicelib.domain import links
from chalicelib.ports.static import StaticObject
from chalicelib.services.sharing import SharePage, share_path

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
CONTENT_REVISION = "3"

STATIC = Path(__file__).resolve().parent.parent / "static" / "share"
# Injected at the end of every served version (static/share/frame.js): it tells the
# share page what the viewer selected (a TextQuoteSelector) and draws the comments'
# highlights. The frame is an opaque origin, so postMessage is the only way in or out;
# it takes messages only from its parent and the service's origin, and the page takes
# messages only from the frame's window.
FRAME_SCRIPT = (STATIC / "frame.js").read_text(encoding="utf-8")


def frame_script() -> bytes:
    origin = _origin(config.base_url())
    return ("<script>" + FRAME_SCRIPT.replace("__PARENT_ORIGIN__", origin) + "</script>").encode("utf-8")


PAGE_CSS = (STATIC / "page.css").read_text(encoding="utf-8")

# The page's own script (static/share/page.js): feedback form, threads, highlights,
# replies, the newer-version notice, the view beacon. Allowed by its CSP hash.
PAGE_SCRIPT = (STATIC / "page.js").read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


# Inline script and style are allowed by hash only (stable, so the page stays cacheable).
def _page_csp(meta: bool = False) -> str:
    """The share page's policy; `meta`: as a static page carries it in a <meta> tag, where
    frame-ancestors means nothing (the CDN's X-Frame-Options: DENY does that part)."""
    frame_src = _origin(config.content_url()) or "'self'"
    return ("default-src 'none'; script-src " + _csp_hash(PAGE_SCRIPT) + "; style-src " + _csp_hash(PAGE_CSS)
            + f"; frame-src {frame_src}; connect-src 'self'; form-action 'self'; base-uri 'none'; "
            "img-src 'self' data:" + ("" if meta else "; frame-ancestors 'none'"))


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


# The version segment of a file's URL may carry the content grant of a protected
# document after "~" (the content origin never sees the unlock cookie, and relative
# references cannot carry a query string along).
GRANT_SEPARATOR = "~"


def _headers(csp: str, cache: str, extra: Optional[dict] = None) -> dict:
    headers = {"Content-Type": HTML_TYPE, "Content-Security-Policy": csp, "Cache-Control": cache,
               "X-Robots-Tag": "noindex, nofollow", "Referrer-Policy": "no-referrer",
               "X-Content-Type-Options": "nosniff"}
    if cache.startswith("public"):
        headers["Vary"] = VARY
    return {**headers, **(extra or {})}


def _page(template: str, title: str, status: int = 200, cache: str = CACHE_PRIVATE,
          extra_headers: Optional[dict] = None, **context) -> Response:
    """A share page: templates/share/<template>, with the page style (and script) allowed by hash."""
    from markupsafe import Markup

    body = rendering.page(f"share/{template}", title=title, css=Markup(PAGE_CSS), **context)
    return Response(body=body, status_code=status,
                    headers=_headers(_page_csp(), cache, {"X-Frame-Options": "DENY", **(extra_headers or {})}))


def _message_page(title: str, heading: str, text: str, status: int, cache: str = CACHE_PRIVATE,
                  extra_headers: Optional[dict] = None) -> Response:
    return _page("message.html", title, status, cache, extra_headers, heading=heading, text=text)


def _not_found_page() -> Response:
    return _message_page("Not found", "Not found", "There is no document at this link. It may have been deleted, "
                         "or the link is mistyped.", 404, CACHE_PAGE)


def _expired_page() -> Response:
    return _message_page("Link expired", "This link has expired", "The person who shared this document set it "
                         "to stop working after a date that has passed. Ask them for a new link if you still "
                         "need it.", 410, CACHE_PAGE)


def _error_page(error: errors.DocpubError) -> Response:
    """The share surface's answer for any error (as_error maps exceptions to errors)."""
    if isinstance(error, errors.NotFound):
        return _not_found_page()
    if isinstance(error, errors.Gone):
        return _expired_page()
    return _message_page("Error", "Something went wrong", error.message, error.status, CACHE_PRIVATE,
                         dict(error.headers))


GENERIC_PREVIEW_TITLE = "A document shared with Docpub"


def _preview(title: str, url: str, description: str = "", image: str = "") -> list[tuple[str, str, str]]:
    """Open Graph and Twitter tags for link unfurls (Slack, iMessage, Discord, X...):
    (attribute, name, content) for templates/share/base.html."""
    tags = [("property", "og:type", "website"), ("property", "og:site_name", "Docpub"),
            ("property", "og:title", title), ("property", "og:url", url), ("name", "twitter:title", title)]
    if description:
        tags += [("property", "og:description", description[:300]),
                 ("name", "twitter:description", description[:300])]
    if image:
        tags += [("property", "og:image", image), ("property", "og:image:type", "image/png"),
                 ("property", "og:image:width", "1200"), ("property", "og:image:height", "630"),
                 ("name", "twitter:card", "summary_large_image"), ("name", "twitter:image", image)]
    else:
        tags.append(("name", "twitter:card", "summary"))
    return tags


def _generic_preview(share_id: str) -> list[tuple[str, str, str]]:
    """What a protected link unfurls as: nothing of the document."""
    return _preview(GENERIC_PREVIEW_TITLE, f"{config.base_url()}{share_path(share_id)}")


def _unlock_page(share_id: str, version: Optional[int], status: int = 200, message: str = "",
                 extra_headers: Optional[dict] = None) -> Response:
    action = share_path(share_id) + "/unlock" + (f"?v={version}" if version else "")
    return _page("unlock.html", "Protected document", status, CACHE_PRIVATE, extra_headers, action=action,
                 message=message, preview=_generic_preview(share_id))


def _viewer_page(page: SharePage, static: bool = False, verified: str = "") -> Response:
    """The wrapper page; `static`: as written for a public link (services/static_pages.py), its
    CSP in a <meta> tag, the GET beacon and the "Verified" line inline (`verified`, no fetch)."""
    from markupsafe import Markup

    # An unlocked page names its version (SharePage leaves these None only when locked).
    assert page.title is not None and page.version_id is not None and page.version_number is not None
    base = share_path(page.share_id)
    links: list[dict[str, Any]] = []
    if page.version_number > 1:
        links.append({"href": f"{base}?v={page.version_number - 1}", "text": "previous"})
    if not page.latest:
        links.append({"href": base, "text": "latest"})
    links.append({"href": f"{base}?download=1" + ("" if page.latest else f"&v={page.version_number}"),
                  "text": "download", "download": True})
    content_src = f"{config.content_url()}{base}/v/{page.version_id}"
    if page.has_files:
        # Opened as <version>/index.html so the page's relative references resolve to its files.
        if config.content_url() and page.content_token:
            content_src += GRANT_SEPARATOR + page.content_token
        content_src += "/index.html"
    elif config.content_url() and page.content_token:  # the content origin never sees the unlock cookie
        content_src += f"?t={page.content_token}"
    cache = CACHE_PRIVATE if page.protected else cache_page(page.cache_seconds)
    url = f"{config.base_url()}{base}"
    if page.protected:  # even for a viewer who unlocked it: a preview names nothing of it
        preview = _generic_preview(page.share_id)
    else:
        from chalicelib.domain.cards import card_key

        name = page.branding.card_name if page.branding else "Docpub"
        preview = _preview(page.title, url, page.description, f"{url}/card.png?k={card_key(page.title, name)}")
    return _page("viewer.html", page.title, 200, cache, preview=preview, version_number=page.version_number,
                 version_count=page.version_count, links=links, content_src=content_src, sandbox=SANDBOX,
                 view_url=f"{base}/{'seen' if static else 'view'}?v={page.version_number}",
                 view_method="get" if static else "post", csp_meta=_page_csp(meta=True) if static else "",
                 branding=page.branding,
                 feedback_action=f"{base}/feedback?v={page.version_number}", script=Markup(PAGE_SCRIPT),
                 share_base=base, version_id=page.version_id, latest=page.latest,
                 newer=(page.version_count or 0) > page.version_number,
                 live_seconds=config.live_poll_seconds(),
                 review_action=f"{base}/reviews?v={page.version_number}",
                 review_panel=f"{base}/review?v={page.version_number}",
                 verified_url="" if static else f"{base}/verified?v={page.version_number}",
                 verified=Markup(verified),
                 review_sign_in=f"{urlparse(config.base_url()).path.rstrip('/')}/dashboard/open?"
                                + urlencode({"share": page.share_id, "v": page.version_number, "review": 1}))


def verified_fragment(line: Any, share_id: str, version: Optional[int]) -> str:
    """The page's "Verified" line (templates/share/verified.html) of a VerifiedLine: what
    `/d/<share>/verified` answers, and what a static page carries inline."""
    base = share_path(share_id)
    page_url = f"{config.base_url()}{base}" + (f"?v={version}" if version else "")
    return str(rendering.fragment(
        "share/verified.html", verified=line, provenance_url=f"{base}/provenance?v={line.version_number}",
        keys_url=f"{urlparse(config.base_url()).path.rstrip('/')}/.well-known/docpub-signing-keys.json",
        page_url=page_url))


# ------------------------------------------------------------------ static copies (issue 38)

# The static beacon's empty object: CloudFront keeps it (its cache policy), browsers never
# (page.js fetches it with cache "no-store"), so every view is a request in CloudFront's logs.
CACHE_BEACON = "public, max-age=0, s-maxage=86400"


def static_objects(ctx, share_id: str, looked_up) -> Iterator[tuple[str, StaticObject]]:
    """(site, object) of a public link's static copy (services/static_pages.py), from what
    storage said of it a moment ago (`looked_up`): the page as anyone gets it from the
    function, with its CSP in a <meta> tag and a GET beacon; the latest version's content
    with the frame script, and a bundle's files up to what the function serves inline
    (larger ones stay on the function, which redirects to storage); the beacon's empty
    object. One object at a time (a bundle's files are never all in memory)."""
    from chalicelib.domain import bundles, limits
    from chalicelib.services import content as contents
    from chalicelib.services.sharing import ContentRef, ShareService

    sharing = ShareService(ctx)
    page = sharing.page(share_id, None, None, looked_up=looked_up)
    assert page.version_id is not None and page.version_number is not None and not page.protected
    doc = looked_up[1]
    base = share_path(share_id)
    content_site = "content" if config.content_url() else "main"
    from chalicelib.services.provenance import ProvenanceService

    line = ProvenanceService(ctx).share_line(share_id, None, None)[0]  # the same for every viewer
    body = _viewer_page(page, static=True, verified=verified_fragment(line, share_id, None) if line else "").body
    yield "main", StaticObject(base, body.encode("utf-8") if isinstance(body, str) else bytes(body), HTML_TYPE,
                               cache_page(page.cache_seconds))
    version_base = f"{base}/v/{page.version_id}"
    content = sharing.read_content(ContentRef(doc, page.version_id, False)) + frame_script()
    yield content_site, StaticObject(version_base + ("/index.html" if page.has_files else ""), content, HTML_TYPE,
                                     cache_content(page.cache_seconds))
    if page.has_files:
        version = ctx.documents.get_version(doc.document_id, page.version_number)
        for entry in (version.files if version is not None else ()):
            if entry["path"] == "index.html" or entry["size_bytes"] > limits.INLINE_RESPONSE_BYTES:
                continue
            yield content_site, StaticObject(f"{version_base}/{entry['path']}",
                                             contents.read_file(ctx, doc.workspace_id, entry["sha256"]),
                                             bundles.content_type(entry["path"]), cache_content(page.cache_seconds))
    yield "main", StaticObject(f"{base}/seen", b"", "text/plain; charset=utf-8", CACHE_BEACON)
