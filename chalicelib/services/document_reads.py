"""Reading documents: one (get, its HTML, a download), a listing page (list, find,
awaiting review, summaries) and its versions. Every other part of DocumentService
builds on these (services/documents.py)."""
from __future__ import annotations

import base64
import builtins
import json
import logging
from typing import Any, Callable, Mapping, Optional, Sequence

from chalicelib.domain import limits
from chalicelib.domain import reviews as review_rules
from chalicelib.domain.search import fold
from chalicelib.errors import NotFound, ValidationFailed, VersionContentMissing
from chalicelib.models import DocumentDetail, DocumentList, DocumentListItem, DocumentSummary, VersionList
from chalicelib.ports import BadCursor, BlobNotFound, version_key
from chalicelib.ports.records import Document, DocumentListing, StoredIdempotency, Version
from chalicelib.services import access, cursors, downloads
from chalicelib.services import content as content_files
from chalicelib.services.access import Actor, Who, canonical_document_id, requires
from chalicelib.services.context import Context, rfc3339
from chalicelib.services.document_shapes import summary_model, version_model
from chalicelib.services.views import ViewService

log = logging.getLogger(__name__)


class DocumentReads:
    """Reads of documents; every other part of DocumentService builds on it."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    # ---------------------------------------------------------------- loading

    def _load(self, who: Who, document_id: Optional[str] = None, idempotency_digest: Optional[str] = None,
              include_deleting: bool = False, seen: Optional[dict[str, Any]] = None
              ) -> tuple[Actor, Optional[Document], Optional[StoredIdempotency]]:
        """Verify the caller and read the document (and idempotency record) in one round trip."""
        found = access.find_document(self.ctx, who, document_id, include_deleting=include_deleting,
                                     idempotency_digest=idempotency_digest, seen=seen)
        return found.actor, found.doc, found.idempotency

    def _load_document(self, who: Who, document_id: str, include_deleting: bool = False,
                       seen: Optional[dict[str, Any]] = None) -> tuple[Actor, Document]:
        """Verify the caller and read an existing document (the one NotFound otherwise)."""
        found = access.find_document(self.ctx, who, document_id, include_deleting=include_deleting, seen=seen)
        return found.actor, found.document

    def _read_html(self, doc: Document, version_id: str) -> str:
        return self._read_bytes(doc, version_id).decode("utf-8")

    def _read_bytes(self, doc: Document, version_id: str) -> bytes:
        try:
            return self.ctx.blobs.get_html(version_key(doc.workspace_id, doc.document_id, version_id))
        except BlobNotFound:
            error = VersionContentMissing(version_id)
            log.error("version content missing", extra={"document_id": doc.document_id, "version_id": version_id,
                                                         "request_id": (error.details or {}).get("request_id")})
            raise error from None

    # ---------------------------------------------------------------- reads

    @requires("get_document")
    def get(self, who: Who, document_id: str, include_html: bool = False,
            version_id: Optional[str] = None, include_source: bool = False) -> DocumentDetail:
        found = access.find_document(self.ctx, who, document_id, with_versions=True)
        doc, versions, document_id = found.document, found.versions, found.id
        html = fmt = source = None
        wanted = version_id or doc.latest_version_id
        chosen = next((v for v in versions if v.version_id == wanted), None)
        if version_id is not None and chosen is None:
            raise NotFound(f"No version {version_id} of document {document_id}.")
        if include_html:
            html = self._read_html(doc, wanted)
        if include_source:
            if chosen is None:
                raise VersionContentMissing(wanted)
            try:
                fmt, data = content_files.read_source(self.ctx, doc, chosen)
            except BlobNotFound:
                raise VersionContentMissing(wanted) from None
            source = data.decode("utf-8")
        views_total, last_viewed_at = ViewService(self.ctx).totals(document_id)
        listed = versions[-limits.VERSIONS_LISTED:]  # the newest, oldest first among them
        return DocumentDetail(**summary_model(doc).model_dump(), versions=[version_model(v) for v in listed],
                              versions_truncated=len(listed) < len(versions),
                              passphrase_protected=bool(doc.passphrase_hash), html=html,
                              share_recipients=list(doc.share_recipients),
                              views_total=views_total, last_viewed_at=last_viewed_at,
                              format=fmt, source=source)  # type: ignore[arg-type]  # html or markdown

    @requires("download_document")
    def download(self, who: Who, document_id: str, version_id: Optional[str] = None) -> "downloads.Download":
        """The owner's download of a version (the latest by default): .html, .md or .zip."""
        found = access.find_document(self.ctx, who, document_id, with_versions=True)
        wanted = version_id or found.document.latest_version_id
        version = next((v for v in found.versions if v.version_id == wanted), None)
        if version is None:
            raise NotFound(f"No version {wanted} of document {found.id}.")
        try:
            return downloads.package(self.ctx, found.document, version)
        except BlobNotFound:
            raise VersionContentMissing(wanted) from None

    @requires("get_document")
    def get_html(self, who: Who, document_id: str, version_number: Optional[int] = None
                 ) -> tuple[Document, Version, str]:
        """(document, version, html) of the latest or a numbered version."""
        found = access.find_document(self.ctx, access.actor(self.ctx, who), document_id)
        doc = found.document
        version = self._numbered_version(doc, version_number or doc.version_count)
        return doc, version, self._read_html(doc, version.version_id)

    def _numbered_version(self, doc: Document, number: int) -> Version:
        """Version `number` of `doc`, or NotFound (also for a number no version can have:
        below 1 or past the latest, which the store need not be asked about)."""
        version = (self.ctx.documents.get_version(doc.document_id, number)
                   if 1 <= number <= doc.version_count else None)
        if version is None:
            raise NotFound(f"No version {number} of document {doc.document_id}.")
        return version

    @requires("diff_versions")
    def comparable_numbers(self, who: Who, document_id: str, old_number: Optional[int],
                           new_number: Optional[int]) -> tuple[int, int]:
        """The version numbers a comparison stands for when one or both are left out: the
        latest version, and the version before the newer one (numbers stay when old
        versions are deleted, so "before" is the nearest one that still exists)."""
        if old_number is not None and new_number is not None:
            return old_number, new_number
        listed = [v.number for v in self.get(who, document_id).versions]  # the newest 100, oldest first
        new = new_number if new_number is not None else listed[-1]
        old = old_number if old_number is not None else max((n for n in listed if n < new), default=new)
        return old, new

    @requires("list_documents")
    def list(self, who: Who, limit: int = 20, cursor: Optional[str] = None,
             query: Optional[str] = None, review_state: Optional[str] = None) -> DocumentList:
        """A page of the workspace's documents, newest first; `query` finds (ranked),
        `review_state` keeps those in that review state (domain/reviews.STATES)."""
        actor = access.actor(self.ctx, who)
        if review_state is not None and review_state not in review_rules.STATES:
            raise ValidationFailed.field("review_state", "must be one of " + ", ".join(review_rules.STATES))
        searching = query is not None and bool(query.strip())
        if review_state is not None:
            listings = (self._ranked(actor, (query or "").strip()) if searching
                        else self.ctx.documents.list_all(actor.workspace_id))
            return self._kept_page(actor, listings, lambda doc: review_rules.state_of(doc) == review_state,
                                   limit, cursor, f"review#{review_state}")
        if searching:
            return self._find(actor, (query or "").strip(), limit, cursor)
        raw = cursors.unseal(actor.workspace_id, "documents", cursor)
        try:
            items, next_cursor = self.ctx.documents.list_page(actor.workspace_id, limit, raw)
        except BadCursor as exc:
            raise ValidationFailed.field("cursor", cursors.MESSAGE) from exc
        return DocumentList(documents=self._list_items(items),
                            next_cursor=cursors.seal(actor.workspace_id, "documents", next_cursor))

    @requires("list_documents")
    def awaiting_review(self, who: Who, email: str, limit: int = 20, cursor: Optional[str] = None) -> DocumentList:
        """The documents `email` (a member) was asked to review and has not decided on in
        their latest version: the dashboard's "Needs my review"."""
        actor = access.actor(self.ctx, who)
        reviewer = f"member:{email}"
        return self._kept_page(actor, self.ctx.documents.list_all(actor.workspace_id),
                               lambda doc: review_rules.awaits(doc, email, reviewer), limit, cursor,
                               f"awaiting#{email}")

    def _kept_page(self, actor: Actor, listings: Sequence[DocumentListing], keep: Callable[[Document], bool],
                   limit: int, cursor: Optional[str], listing: str) -> DocumentList:
        """A page of the listings whose document `keep`s, in their order: the documents are
        read a hundred at a time (one batch read each) until the page is full."""
        offset = _decode_offset(cursors.unseal(actor.workspace_id, listing, cursor))
        kept: builtins.list[tuple[DocumentListing, Document]] = []
        for start in range(0, len(listings), 100):
            chunk = listings[start:start + 100]
            docs = self.ctx.documents.get_many([i.document_id for i in chunk])
            kept += [(i, d) for i in chunk if (d := docs.get(i.document_id)) is not None
                     and access.visible(d, actor) and keep(d)]
            if len(kept) > offset + limit:
                break
        page = kept[offset:offset + limit]
        more = len(kept) > offset + limit
        return DocumentList(
            documents=self._list_items([i for i, _ in page], {d.document_id: d for _, d in page}),
            next_cursor=cursors.seal(actor.workspace_id, listing, _encode_offset(offset + limit) if more else None))

    def _list_items(self, items: Sequence[DocumentListing],
                    docs: Optional[Mapping[str, Document]] = None) -> builtins.list[DocumentListItem]:
        """Summaries with their views (one counter read per page, not per document) and
        review states (kept on the documents: one batch read per page, unless given)."""
        ids = [i.document_id for i in items]
        totals = self.ctx.views.totals(ids)
        if docs is None:
            docs = self.ctx.documents.get_many(ids) if ids else {}
        listed = []
        for item in items:
            views_total, last_ms = totals.get(item.document_id, (0, None))
            doc = docs.get(item.document_id)
            state = review_rules.state_of(doc) if doc is not None else "none"
            listed.append(DocumentListItem(**summary_model(item, state).model_dump(), views_total=views_total,
                                           last_viewed_at=rfc3339(last_ms)))
        return listed

    def summaries(self, who: Who, document_ids: Sequence[str]) -> dict[str, DocumentSummary]:
        """The caller's documents among `document_ids` (at most 100), by id, in one
        read; ids of other workspaces, deleted or unknown documents are left out."""
        actor = access.actor(self.ctx, who)
        wanted = {access.canonical_document_id(i) for i in document_ids if access.well_formed_id(i)}
        found = self.ctx.documents.get_many(sorted(wanted)) if wanted else {}
        return {document_id: summary_model(doc) for document_id, doc in found.items() if access.visible(doc, actor)}

    def _find(self, actor: Actor, query: str, limit: int, cursor: Optional[str]) -> DocumentList:
        offset = _decode_offset(cursors.unseal(actor.workspace_id, "find", cursor))
        ranked = self._ranked(actor, query)
        page = ranked[offset:offset + limit]
        more = offset + limit < len(ranked)
        return DocumentList(documents=self._list_items(page),
                            next_cursor=cursors.seal(actor.workspace_id, "find",
                                                     _encode_offset(offset + limit) if more else None))

    def _ranked(self, actor: Actor, query: str) -> builtins.list[DocumentListing]:
        """The documents matching `query`: exact title, title prefix, title, description."""
        needle = fold(query)
        ranked = []
        for position, item in enumerate(self.ctx.documents.list_all(actor.workspace_id)):
            title = fold(item.title)
            description = fold(item.description)
            if title == needle:
                rank = 0
            elif title.startswith(needle):
                rank = 1
            elif needle in title:
                rank = 2
            elif needle in description:
                rank = 3
            else:
                continue
            ranked.append((rank, position, item))  # position keeps newest-first within a rank
        ranked.sort(key=lambda r: (r[0], r[1]))
        return [i for _, _, i in ranked]

    @requires("list_versions")
    def list_versions(self, who: Who, document_id: str, limit: int = 20,
                      cursor: Optional[str] = None) -> VersionList:
        """Every version of a document, newest first, `limit` a page (GET one lists the newest 100)."""
        document_id = canonical_document_id(document_id)
        found = access.find_document(self.ctx, who, document_id, with_versions=True)
        listing = f"versions:{document_id}"
        offset = _decode_offset(cursors.unseal(found.actor.workspace_id, listing, cursor))
        newest_first = list(reversed(found.versions))
        page = newest_first[offset:offset + limit]
        more = offset + limit < len(newest_first)
        return VersionList(versions=[version_model(v) for v in page],
                           next_cursor=cursors.seal(found.actor.workspace_id, listing,
                                                    _encode_offset(offset + limit) if more else None))


def _encode_offset(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def _decode_offset(cursor: Optional[str]) -> int:
    if not cursor:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode()))
        offset = data["o"]
        if type(offset) is not int or offset < 0:
            raise ValueError
        return offset
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        raise ValidationFailed.field("cursor", "is not a cursor this service returned") from exc
