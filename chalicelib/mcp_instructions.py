"""What Docpub's MCP server tells a model at initialize (shared by /mcp and the stdio proxy)."""

INSTRUCTIONS = (
    "Docpub publishes HTML documents behind shareable links. publish_document creates a document "
    "(or a new version of one) and returns its share_url; edit_document changes an existing document "
    "with exact search-and-replace edits, which is cheaper and safer than re-publishing the whole HTML; "
    "find_document and list_documents locate documents; get_document reads one (with include_html=true "
    "for its HTML); list_feedback and resolve_feedback handle what viewers wrote on shared documents; "
    "get_document_stats tells how often a share link was viewed, per day and per version. "
    "Limits: HTML up to 4 MiB (4,194,304 bytes of UTF-8); free workspaces hold at most 5 documents; "
    "publish and edit together allow 60 writes per minute per API key. A failed call returns text "
    "starting with an error code (e.g. 'edit_not_found: ...') that says how to correct the call."
)
