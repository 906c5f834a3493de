"""A document as its answers show it: summary, versions, share URL and the
excluded fields of a DocumentDetail; and the event a change of it sends."""
from __future__ import annotations

from typing import Optional, Union

from chalicelib import config
from chalicelib.domain import links
from chalicelib.domain import reviews as review_rules
from chalicelib.models import DocumentSummary, FileInfo, VersionInfo
from chalicelib.ports.records import Document, DocumentListing, Event, Version
from chalicelib.services.context import rfc3339, rfc3339_ms


def share_url(share_id: str) -> str:
    return f"{config.base_url()}/d/{share_id}"


def summary_model(doc: Union[Document, DocumentListing], review_state: Optional[str] = None) -> DocumentSummary:
    """The document's summary; a listing holds no review state: give `review_state` (read
    from the Document) or it answers none."""
    if review_state is None:
        review_state = review_rules.state_of(doc) if isinstance(doc, Document) else "none"
    return DocumentSummary(
        document_id=doc.document_id, title=doc.title, description=doc.description,
        share_url=share_url(doc.share_id), created_at=rfc3339(doc.created_ms),
        updated_at=rfc3339(doc.updated_ms), version_count=live_versions(doc),
        latest_version_id=doc.latest_version_id,
        open_feedback_count=doc.open_feedback_count,
        share_enabled=links.enabled(doc), share_expires_at=rfc3339_ms(links.expires_ms(doc)),
        share_access=doc.share_access or "public",  # type: ignore[arg-type]  # public | workspace | recipients
        review_state=review_state,  # type: ignore[arg-type]  # one of domain/reviews.STATES
    )


def live_versions(doc: Union[Document, DocumentListing]) -> int:
    """How many versions a document holds (numbers stay as they were when old ones are deleted)."""
    return doc.version_count - doc.versions_deleted


def version_model(item: Version) -> VersionInfo:
    return VersionInfo(version_id=item.version_id, number=item.number, note=item.note,
                       created_at=rfc3339(item.created_ms), size_bytes=item.size_bytes,
                       files=[FileInfo(**f) for f in item.files] if item.files else None)


def document_exclusions(include_html: bool, include_source: bool) -> Optional[set[str]]:
    """Fields of DocumentDetail left out of an answer unless asked for."""
    excluded = set() if include_html else {"html"}
    if not include_source:
        excluded |= {"format", "source"}
    return excluded or None


def document_event(kind: str, doc: Document, now_ms: int) -> Event:
    """A `document.*` event of `doc` (its summary), written with the change."""
    from chalicelib.services.events import make_event

    return make_event(kind, doc.workspace_id, doc.document_id, now_ms,
                      summary_model(doc).model_dump(mode="json"))
