"""Documents: publish, edit, read, list, find, update and delete.

Who may act is either presented API-key `Credentials` (REST, MCP) or an
`Actor` already authenticated by a dashboard session. Writes through a key
claim a slot of the key's write rate limit inside the same transaction that
stores the version, so an accepted write and its slot are one atomic step.

`DocumentService` is the one service the entrypoints call; its parts live where
what changes together is kept:

- services/document_reads.py: get, get_html, download, list / find / awaiting
  review, summaries, list_versions (and the loading every part starts with);
- services/document_writes.py: what every new version shares (the write-limit
  slots, quota, rate-limit headers, races lost, objects discarded), `WriteResult`;
- services/publishing.py: publish (JSON, file, upload_id, Idempotency-Key), restore;
- services/document_edits.py: edit, edit_resolving (an accepted suggestion);
- services/document_settings.py: update (PATCH: title, description, link settings);
- services/document_deletion.py: delete, delete_version, finish_delete;
- services/document_shapes.py: the answers' shapes (summary_model, share_url, ...).
"""
from __future__ import annotations

from chalicelib.services.document_deletion import DocumentDeletion
from chalicelib.services.document_edits import DocumentEdits
from chalicelib.services.document_settings import DocumentSettings
from chalicelib.services.publishing import Publishing


class DocumentService(Publishing, DocumentEdits, DocumentSettings, DocumentDeletion):
    """Every use case of a document, on one Context (wiring.documents())."""
