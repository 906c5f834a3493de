"""What Docpub's MCP server tells a model at initialize (shared by /mcp and the stdio proxy).

Built at call time from the limits table (domain/limits.py), so settings such as
DOCPUB_WRITE_RATE_LIMIT change what the model is told as well as what is enforced.
"""
from __future__ import annotations

from chalicelib.domain import limits


def limit_words() -> dict[str, str]:
    """The placeholders tool descriptions and instructions are written with."""
    return {"html_size": limits.html_size_text(), "html_size_short": limits.html_size_short(),
            "free_documents": limits.plural(limits.FREE_MAX_DOCUMENTS, "document"),
            "free_versions": f"{limits.FREE_MAX_VERSIONS_PER_DOCUMENT:,}",
            "write_rate": limits.write_rate_text(), "edits": limits.edits_text()}


def instructions() -> str:
    return (
        "Docpub publishes HTML documents behind shareable links. publish_document creates a document "
        "(or a new version of one) and returns its share_url; edit_document changes an existing document "
        "with exact search-and-replace edits, which is cheaper and safer than re-publishing the whole HTML; "
        "find_document and list_documents locate documents; get_document reads one (with include_html=true "
        "for its HTML); list_feedback and resolve_feedback handle what viewers wrote on shared documents; "
        "update_document can disable a share link (share_enabled=false) or make it expire (share_expires_at), "
        "and rotate_share_link replaces a leaked link with a new one. "
        "get_document_stats tells how often a share link was viewed, per day and per version. "
        "To get a document approved, run the review loop: publish_document, then request_review with the "
        "reviewers' email addresses (members of the workspace; each is mailed the link), then "
        "wait_for_review (pass back the `since` it returns each time; it answers on the first review, "
        "comment or reply, else after timeout_seconds: call it again). When review_state is "
        "changes_requested or feedback arrived, change the document with edit_document (or "
        "accept_suggestion for a suggested edit), reply_to_feedback if useful, and wait_for_review again; "
        "a new version makes the state pending. Stop when review_state is approved. "
        "Limits: HTML up to {html_size}; free workspaces hold at most {free_documents}; "
        "publish and edit together allow {write_rate}. A failed call returns text "
        "starting with an error code (e.g. 'edit_not_found: ...') that says how to correct the call. "
        "Content is scanned for credentials before it is stored: 'secret_detected: ...' names each key "
        "or token and its line and column; remove them (or use a placeholder) and call again, and pass "
        "allow_secrets=true only when the person you work for says the value must be published."
    ).format(**limit_words())
