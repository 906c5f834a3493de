"""Every limit of sizes, plans and rates Docpub enforces, and the words that
describe it: one table. (Field lengths of requests live in models.py, the
source of the OpenAPI schema.)

Services enforce these values; the MCP tool descriptions and server
instructions, the dashboard and the sign-up page describe them with the
`*_text()` functions below, so a setting (e.g. DOCPUB_WRITE_RATE_LIMIT)
changes what is enforced and what is said in the same place. Configurable
limits are read from chalicelib.config at call time, never at import time.
"""
from __future__ import annotations

from typing import NamedTuple

from chalicelib import config
from chalicelib.errors import DocumentTooLarge, InvalidJson, ValidationFailed


class Rate(NamedTuple):
    """At most `limit` events in any rolling `window_seconds` (a sliding log)."""
    limit: int
    window_seconds: int


# ------------------------------------------------------------------ the table

# Size of one document's HTML (UTF-8 bytes), every plan; edits in one request. models.py
# takes both from here (a share page's cold start imports this table, not pydantic).
MAX_HTML_BYTES = 4 * 1024 * 1024
MAX_EDITS = 100
HTML_BYTES = MAX_HTML_BYTES
# Segments deep a bundle's file may sit (a file at a/b/c.png is 3 deep): share links route
# each depth (API Gateway and chalice local have no portable catch-all route). Kept at 8:
# each level costs nothing measurable at cold start but adds ~42 KB to the packaged
# CloudFormation template (each route's OpenAPI entry repeats every path parameter), and
# CloudFormation refuses a template over 1 MB: measured 0.88 MB at 8 levels, 1.10 MB at
# 16, 1.78 MB at 32 (bench/share_depth.py, docs/performance.md).
BUNDLE_MAX_DEPTH = 8
# Markdown source (UTF-8 bytes): the contract's 4 MiB, like HTML (section 7b: "the 4 MiB
# limit applies to the source and to the rendered page"). Prose renders at about 1 s per MiB;
# a source dense with tables and code blocks renders to a page several times its size:
# rendering stops as soon as the page passes HTML_BYTES (domain/markdown.render_body), so
# refusing it costs about a page's worth of work, not the whole source's (docs/performance.md).
MARKDOWN_BYTES = HTML_BYTES
# CPU seconds (of the rendering thread) a Markdown source may take to render (issue 33): the
# contract bounds a whole request at 10 s of one core, so the render stops (422 "too complex
# to render", nothing stored) with room left for the rest: freeing what a refused render built
# costs up to a sixth more (bench/adversarial.py measured 9.2 s for a publish refused at 8 s).
# 4 MiB of prose renders in ~3.6 s. markdown-it-py itself costs up to
# ~13 s per MiB on floods of `![` (docs/performance.md, bench/adversarial.py); prose about 1.
MARKDOWN_CPU_SECONDS = 6.0
# The secret scan of one write (page and bundle files together, contract 7g); with a Markdown
# render's budget, one write stays under the 10 s of CPU the contract bounds a request at. An
# ordinary 4 MiB page takes ~0.1 s, the worst 4 MiB input found ~1.6 s (bench/scanning.py).
SCAN_CPU_SECONDS = 3.0
# The largest file a deployed function answers itself: a Lambda response carries at most
# 6 MB and a binary answer is base64-encoded (4/3 larger). A larger download or bundle
# file is redirected (302) to a short-lived presigned S3 URL; the embedded store sends any size.
INLINE_RESPONSE_BYTES = 4 * 1024 * 1024
# The dashboard's upload page sends a file up to this size in its form; a larger one (a .zip
# up to 36 MiB) goes to storage first (POST /dashboard/uploads, a PUT to the presigned URL),
# then the form carries its upload_id. Through API Gateway a multipart body reaches Lambda
# base64-encoded (4/3), and Lambda takes 6 MB: 3 MiB leaves room for the fields.
DASHBOARD_DIRECT_UPLOAD_BYTES = 3 * 1024 * 1024
# Search-and-replace edits in one edit request.
EDITS_PER_REQUEST = MAX_EDITS
# The free plan's caps (Pro has none).
FREE_MAX_DOCUMENTS = 5
FREE_MAX_API_KEYS = 1
# Storage per workspace (every version and file, content as sent) and versions per document.
FREE_MAX_STORAGE_BYTES = 100 * 1024 * 1024
PRO_MAX_STORAGE_BYTES = 20 * 1024 * 1024 * 1024
FREE_MAX_VERSIONS_PER_DOCUMENT = 100
PRO_MAX_VERSIONS_PER_DOCUMENT = 10_000
# All writes of a workspace together (every key, revoked ones too, OAuth grants and
# dashboard sessions), counted per clock-aligned window: rotating keys gains nothing.
WORKSPACE_WRITE_RATE = Rate(120, 60)
# Account passwords and share-link passphrases (characters); both must also not be
# weak (domain/strength.py: zxcvbn score 2 or more).
PASSWORD_CHARS = (8, 200)
PASSPHRASE_CHARS = (8, 200)
# One-time links mailed to people (seconds) and how long the activity log keeps entries.
VERIFY_LINK_SECONDS = 24 * 3600
RESET_LINK_SECONDS = 3600
INVITE_LINK_SECONDS = 7 * 24 * 3600
LOGIN_LINK_SECONDS = 3600
ACTIVITY_DAYS = 90

# The review loop (contract 7c). Field lengths (message, quote, anchor) are in models.py.
REPLIES_PER_THREAD = 200
# Webhooks per workspace, every plan; a 6th is 403 plan_limit_reached.
WEBHOOKS_PER_WORKSPACE = 5
# A waiting feedback list answers within this many seconds (API Gateway stops at 29).
WAIT_MAX_SECONDS = 25
# A waiting list reads storage at most once per this many seconds.
WAIT_READ_INTERVAL_SECONDS = 1.0
# At most this many requests of one workspace wait at once (`wait=` on lists, MCP
# wait_for_*; services/waits.wait_slot); another is 429 with Retry-After: 1. A slot
# is a lease that lapses this long after it was taken even if its request died
# (past the longest wait and the deployed function's 29 s timeout).
WAITS_PER_WORKSPACE = 10
WAIT_LEASE_SECONDS = 40
# Uploads created and neither published nor expired, per workspace (services/uploads.py).
PENDING_UPLOADS_PER_WORKSPACE = 10
# Workspace exports (contract 7g): one running per workspace; a build still running after
# EXPORT_RUNNING_SECONDS (the worker function's timeout) counts as failed and frees the
# place; a ready zip is downloadable for EXPORT_AVAILABLE_SECONDS; a start refused because
# one runs says to retry after at most EXPORT_RETRY_SECONDS.
EXPORT_RUNNING_SECONDS = 15 * 60
EXPORT_AVAILABLE_SECONDS = 3600
EXPORT_RETRY_SECONDS = 5
# Exports started per workspace a day (each reads, zips and stores the whole workspace).
EXPORTS_PER_WORKSPACE = Rate(10, 24 * 60 * 60)
# A delivery that fails is retried for this long, the first retry after
# config.webhook_retry_base_seconds(), doubling each time.
WEBHOOK_RETRY_SECONDS = 24 * 3600
# One delivery attempt: connect, send and the answer's status line within this.
WEBHOOK_TIMEOUT_SECONDS = 10
# The delivery log keeps (and shows) this many of a webhook's newest deliveries.
WEBHOOK_DELIVERIES_SHOWN = 50
# An open share page asks whether a newer version exists this often (it shows
# within the poll plus the edge's cache time: 10 + 10 s, under the contract's 30 s).
LIVE_POLL_SECONDS = 10
LIVE_EDGE_SECONDS = 10

# Standalone sliding logs of the dashboard (per client IP / per account).
SIGN_IN_PER_IP = Rate(20, 15 * 60)
# Single sign-ons started per client address (each stores a 10-minute state; contract 7f).
SSO_START_PER_IP = Rate(30, 10 * 60)
# Guessing one account's password from one address is stopped quickly; the
# account-wide cap is high, so an attacker cannot lock its owner out cheaply.
SIGN_IN_PER_ACCOUNT_AND_IP = Rate(10, 15 * 60)
SIGN_IN_PER_ACCOUNT = Rate(100, 15 * 60)
# Failures from a browser that signed in to the account before (its device
# cookie): such a browser is judged on its own failures only, so a stranger
# spending the account-wide budget never locks the owner out (OWASP's device cookies).
SIGN_IN_PER_DEVICE = Rate(10, 15 * 60)
SIGN_UP_PER_IP = Rate(10, 60 * 60)  # the default of sign_up_per_ip()
# Mail a stranger can make Docpub send: reset links per address and per account
# (no mail-bombing one inbox), invitations per workspace.
RESET_PER_IP = Rate(10, 60 * 60)
RESET_PER_ACCOUNT = Rate(5, 60 * 60)
VERIFY_RESEND_PER_ACCOUNT = Rate(5, 60 * 60)
INVITES_PER_WORKSPACE = Rate(50, 24 * 60 * 60)
# Review requests mailed to people outside the workspace (recipients of a `recipients`
# link, any address at a listed @domain), per workspace: each reviewer's mail counts.
REVIEW_MAILS_TO_RECIPIENTS = Rate(100, 24 * 60 * 60)
# API keys created per workspace (every plan): rotating keys gains nothing.
KEYS_CREATED_PER_WORKSPACE = Rate(10, 60 * 60)
# GET one document lists at most this many versions (the newest); the versions route pages through all.
VERSIONS_LISTED = 100
# OAuth endpoints for MCP clients (per client IP): registrations, authorization
# requests, token and revocation calls.
OAUTH_REGISTER_PER_IP = Rate(20, 60 * 60)
OAUTH_AUTHORIZE_PER_IP = Rate(60, 10 * 60)
OAUTH_TOKEN_PER_IP = Rate(120, 10 * 60)
# The dashboard's consent page, and fetches of client ID metadata documents (a
# request to an address a stranger chose) that are not in the cache, per client IP.
OAUTH_CONSENT_PER_IP = Rate(60, 10 * 60)
OAUTH_METADATA_FETCHES_PER_IP = Rate(20, 10 * 60)
# New OAuth clients stored service-wide (dynamic registrations and fetched client ID
# metadata documents together), per fixed 24-hour window. An unused client expires within
# 24 h (a cached document within its cache lifetime), so at most twice this many unused
# clients are ever stored, however many addresses register; past it, 503 (RFC 7591
# `temporarily_unavailable`) until the window turns.
OAUTH_NEW_CLIENTS = Rate(10_000, 24 * 60 * 60)


def sign_up_per_ip() -> Rate:
    """Sign-ups per client address per hour (config.sign_up_per_hour, default 10)."""
    return Rate(config.sign_up_per_hour(), SIGN_UP_PER_IP.window_seconds)


def write_rate() -> Rate:
    """Publishes and edits together, per API key (and per workspace for dashboard saves)."""
    return Rate(config.write_rate_limit(), config.write_rate_window_seconds())


def workspace_write_rate() -> Rate:
    return WORKSPACE_WRITE_RATE


def viewer_rate() -> Rate:
    """Unlock attempts, and feedback posts, per client IP per document."""
    return Rate(config.viewer_rate_limit(), config.viewer_rate_window_seconds())


# Recipient links (contract 7f): a 6-digit code, valid 10 minutes, 5 tries; at most 5 codes
# per email address and 20 per client address an hour (whatever the link).
RECIPIENT_CODE_DIGITS = 6
RECIPIENT_CODE_SECONDS = 600
RECIPIENT_CODE_TRIES = 5
RECIPIENT_CODES_PER_EMAIL = Rate(5, 3600)
RECIPIENT_CODES_PER_IP = Rate(20, 3600)
# Codes mailed for one link an hour to addresses its @domain entries admit, whoever asks
# (client addresses are many: an IPv6 /48 is 65,536 of them); past it such an address gets
# no mail and the answer is the same. Addresses listed one by one are not counted (at most
# 100 of them, 5 codes an hour each): a stranger spending the budget never locks them out.
RECIPIENT_CODE_MAILS_PER_DOCUMENT = Rate(200, 3600)


def unlock_failure_rate() -> Rate:
    """Failed unlocks per document across all addresses (then 429 for everyone)."""
    return Rate(config.unlock_failure_budget(), config.unlock_failure_window_seconds())


# What a refusal of a standalone scope says (followed by "; try again in <wait>.").
REFUSALS = {
    "signin-ip": "Too many sign-in attempts from this address",
    "signin-account-ip": "Too many sign-in attempts for this account from this address",
    "signin-account": "Too many sign-in attempts for this account",
    "signin-device": "Too many sign-in attempts from this browser",
    "sso-start": "Too many single sign-ons started from this address",
    "password-change": "Too many password attempts for this account",
    "signup-ip": "Too many sign-ups from this address",
    "reset-ip": "Too many password reset requests from this address",
    "reset-account": "Too many password reset requests for this account",
    "verify-resend": "Too many confirmation emails for this account",
    "invites": "Too many invitations from this workspace today",
    "review-mails": "Too many review requests mailed to people outside this workspace today",
    "key-creation": "Too many API keys were created in this workspace",
    "session-writes": "Too many saves in this workspace",
    "grant-writes": "Too many writes through this connected app",
    "oauth-register": "Too many app registrations from this address",
    "oauth-authorize": "Too many authorization requests from this address",
    "oauth-token": "Too many token requests from this address",
    "oauth-consent": "Too many authorization pages from this address",
    "oauth-metadata": "Too many client metadata documents fetched for this address",
    "oauth-clients": "This server has taken all the new app registrations it stores for today",
    "unlock": "Too many unlock attempts from your address for this document",
    "feedback": "Too many feedback messages from your address for this document",
    "recipient-code-email": "Too many codes were asked for this email address",
    "recipient-code-ip": "Too many codes were asked from your address",
    "recipient-code-mails": "Too many codes were mailed for this link",
    "exports": f"This workspace has started its {EXPORTS_PER_WORKSPACE.limit} exports of the day (a ready zip "
               "stays downloadable for an hour)",
    "webhook-writes": "Too many webhook changes in this workspace",
}


# ------------------------------------------------------------------ wording

def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def per_window(seconds: int) -> str:
    """60 → "per minute", 3600 → "per hour", 600 → "per 10 minutes", 45 → "per 45 seconds"."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"per {unit}" if count == 1 else f"per {count:,} {unit}s"
    return f"per {seconds:,} seconds"


def human_wait(seconds: int) -> str:
    return plural(seconds, "second") if seconds < 90 else plural((seconds + 59) // 60, "minute")


def html_size_text() -> str:
    return f"{HTML_BYTES // (1024 * 1024)} MiB ({HTML_BYTES:,} bytes of UTF-8)"


def html_size_short() -> str:
    return f"{HTML_BYTES // (1024 * 1024)} MiB"


def write_rate_text() -> str:
    rate = write_rate()
    return f"{plural(rate.limit, 'write')} {per_window(rate.window_seconds)} per API key"


def free_plan_text() -> str:
    return f"{plural(FREE_MAX_DOCUMENTS, 'document')}, {plural(FREE_MAX_API_KEYS, 'API key')}"


def write_refusal(retry_after_seconds: int) -> str:
    return (f"Write rate limit of {write_rate_text()} reached; "
            f"try again in {human_wait(retry_after_seconds)}.")


def workspace_write_refusal(retry_after_seconds: int) -> str:
    rate = workspace_write_rate()
    return (f"This workspace's write limit of {plural(rate.limit, 'write')} {per_window(rate.window_seconds)} "
            f"(all keys and connected apps together) is reached; try again in {human_wait(retry_after_seconds)}.")


def bytes_text(size: int | None) -> str:
    """1536 → "1.5 KiB", 104857600 → "100 MiB", None → "unlimited"."""
    if size is None:
        return "unlimited"
    for unit, scale in (("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if abs(size) >= scale:
            value = size / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return plural(size, "byte")


def edits_text() -> str:
    return f"1 to {EDITS_PER_REQUEST} edits"


# ------------------------------------------------------------------ the size rule

def encoded_html(html: str) -> bytes:
    """UTF-8 bytes of a document, refusing anything over the limit with 413."""
    try:
        data = html.encode("utf-8")
    except UnicodeEncodeError:
        # Only reachable with a lone surrogate the JSON parse let through.
        raise InvalidJson("The request body contains an unpaired UTF-16 surrogate.") from None
    return checked_size(data)


def checked_size(data: bytes) -> bytes:
    """`data` if within the limit, else 413 `document_too_large`."""
    if len(data) > HTML_BYTES:
        raise too_large(len(data))
    return data


def rendered_too_large(size_bytes: int) -> DocumentTooLarge:
    """The contract's 413 for a Markdown source whose page passes the limit: rendering stops
    there, so `size_bytes` is what the page had reached (the whole page would be larger)."""
    return DocumentTooLarge(
        f"The page rendered from this Markdown passes the limit of {HTML_BYTES:,} bytes ({html_size_short()}): "
        f"rendering stopped at {size_bytes:,} bytes. Tables and code blocks render to several times "
        "their source size: split the document, or publish fewer of them.",
        {"limit_bytes": HTML_BYTES, "size_bytes": size_bytes})


def too_complex_to_render() -> ValidationFailed:
    """The contract's 422 for a Markdown source whose rendering passed MARKDOWN_CPU_SECONDS."""
    return ValidationFailed.field(
        "html", f"is too complex to render: it passed {MARKDOWN_CPU_SECONDS:g} s of CPU before its page was "
                "done (long runs of unclosed brackets, emphasis marks or tags cost the most); "
                "split the document or simplify those runs")


def too_complex_to_scan(field: str) -> ValidationFailed:
    """The contract's 422 for content whose secret scan passed SCAN_CPU_SECONDS (nothing stored)."""
    return ValidationFailed.field(
        field, f"is too complex to scan for secrets: the scan passed {SCAN_CPU_SECONDS:g} s of CPU "
               "(floods of keywords such as key, token or password cost the most); split the content")


def too_large(size_bytes: int, edit_index: int | None = None) -> DocumentTooLarge:
    """The contract's 413; for an edit batch it names the first edit whose result
    would exceed the limit and the size that edit would produce."""
    details = {"limit_bytes": HTML_BYTES, "size_bytes": size_bytes}
    if edit_index is None:
        return DocumentTooLarge(
            f"The HTML is {size_bytes:,} bytes; the limit is {HTML_BYTES:,} bytes ({html_size_short()}). "
            "Inlined base64 images are the usual cause: host images at a URL instead.", details)
    details["edit_index"] = edit_index
    return DocumentTooLarge(
        f"edits[{edit_index}] would make the HTML {size_bytes:,} bytes; the limit is "
        f"{HTML_BYTES:,} bytes ({html_size_short()}). Nothing was changed.", details)
