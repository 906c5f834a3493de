"""What each dashboard page shows, asked of the services in one place.

A page of the dashboard often shows several things (a document, its workspace's
plan, its views, its failed unlocks); this service gathers them from the
services that hold the rules (documents, workspaces, feedback, sharing, views,
editing), so the dashboard's page modules only parse forms, call one method and
render. It holds no rule of its own and reads no storage itself.

The inbox is one feedback query plus one read of the documents it names
(`DocumentService.summaries`), whatever the number of documents on the page.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Sequence

from chalicelib.domain import roles
from chalicelib.models import (
    DocumentDetail, DocumentList, DocumentStats, DocumentSummary, Feedback, RecipientInfo, Review, Workspace,
)
from chalicelib.services import access
from chalicelib.services.access import Who
from chalicelib.services.context import rfc3339
from chalicelib.services.feedback import STATUSES

if TYPE_CHECKING:
    from chalicelib.services.documents import DocumentService
    from chalicelib.services.editing import EditingService
    from chalicelib.services.feedback import FeedbackService
    from chalicelib.services.reviews import ReviewService
    from chalicelib.services.recipients import RecipientService
    from chalicelib.services.sharing import ShareService
    from chalicelib.services.views import Ranked, ViewService
    from chalicelib.services.workspaces import WorkspaceService

INBOX_PAGE = 20
DOCUMENTS_PAGE = 20
FILTER_DOCUMENTS = 100  # the inbox's "Document" filter lists the most recently updated
SPARKLINE_DAYS = 7
VIEWS_DAYS = 30


@dataclass(frozen=True)
class DocumentsPage:
    listing: DocumentList
    workspace: Workspace
    sparklines: dict[str, tuple[list[str], list[int]]]  # document id -> (days, views per day)


@dataclass(frozen=True)
class DocumentPage:
    document: DocumentDetail
    workspace: Workspace
    failed_unlocks: Optional[dict[str, Any]]  # only for a protected document
    views: Optional[DocumentStats]
    # The decisions, newest version first: (version number, its reviews newest first).
    reviews: list[tuple[int, list[Review]]] = field(default_factory=list)
    requested: tuple[str, ...] = ()  # who was asked to review
    recipients: list[RecipientInfo] = field(default_factory=list)  # a recipients link's people (7f)


REVIEW_FILTERS = ("mine", "pending", "changes_requested", "approved", "none")  # "Needs my review" first


@dataclass(frozen=True)
class EditPage:
    document: DocumentDetail
    workspace: Workspace
    html: Optional[str]  # None when the plan has no dashboard editing


@dataclass(frozen=True)
class InboxEntry:
    feedback: Feedback
    document: Optional[DocumentSummary]  # None: the document went while the page was read
    version_number: Optional[int]


@dataclass(frozen=True)
class Inbox:
    entries: list[InboxEntry]
    documents: Sequence[DocumentSummary]  # for the filter
    status: str
    document_id: Optional[str]
    next_cursor: Optional[str]


@dataclass(frozen=True)
class KeysPage:
    workspace: Workspace
    keys: list[dict[str, Any]]
    active_count: int


@dataclass(frozen=True)
class WorkspacePage:
    workspace: Workspace
    key_count: int
    most_viewed: list[Ranked]


class DashboardPages:
    def __init__(self, documents: DocumentService, workspaces: WorkspaceService, feedback: FeedbackService,
                 sharing: ShareService, views: ViewService, editing: EditingService,
                 reviews: ReviewService, recipients: Optional[RecipientService] = None) -> None:
        self.reviews = reviews
        self.recipients = recipients
        self.documents = documents
        self.workspaces = workspaces
        self.feedback = feedback
        self.sharing = sharing
        self.views = views
        self.editing = editing

    # ---------------------------------------------------------------- documents

    def documents_page(self, who: Who, query: str = "", cursor: Optional[str] = None,
                       review: str = "") -> DocumentsPage:
        """A page of documents; `review` filters: "mine" (what the signed-in member was asked to
        review and has not decided on) or a review state; anything else: no filter."""
        member = access.actor(self.documents.ctx, who).member
        if review == "mine" and member:
            listing = self.documents.awaiting_review(who, member, DOCUMENTS_PAGE, cursor)
        else:
            state = review if review in REVIEW_FILTERS and review != "mine" else None
            listing = self.documents.list(who, DOCUMENTS_PAGE, cursor, query or None, state)
        workspace = self.workspaces.get_workspace(access.actor(self.documents.ctx, who).workspace_id)
        sparklines = self.views.sparklines([d.document_id for d in listing.documents], SPARKLINE_DAYS)
        return DocumentsPage(listing=listing, workspace=workspace, sparklines=sparklines)

    def document_page(self, who: Who, document_id: str) -> DocumentPage:
        document = self.documents.get(who, document_id)
        workspace = self._workspace(who)
        failed = None
        if document.passphrase_protected:
            found = self.sharing.failed_unlocks(who, document.document_id)
            failed = {"count": found.count, "exhausted": found.exhausted, "window_seconds": found.window_seconds,
                      "last": rfc3339(found.last_ms) if found.last_ms else None}
        views = self.views.stats_for(document.document_id, [v.version_id for v in document.versions], VIEWS_DAYS)
        stored, history = self.reviews.history(who, document.document_id)
        by_version: dict[int, list[Review]] = {}
        for item in history:
            by_version.setdefault(item.version_number, []).append(item)
        people = (self.recipients.listed(stored) if self.recipients is not None
                  and (stored.share_access == "recipients" or stored.share_recipients) else [])
        return DocumentPage(document=document, workspace=workspace, failed_unlocks=failed, views=views,
                            reviews=sorted(by_version.items(), reverse=True), requested=stored.review_requested,
                            recipients=people)

    def document(self, who: Who, document_id: str) -> DocumentDetail:
        return self.documents.get(who, document_id)

    def upload_page(self, who: Who, document_id: Optional[str] = None) -> tuple[Optional[DocumentDetail], Workspace]:
        """The upload form: for a new version of `document_id`, or a new document."""
        document = self.documents.get(who, document_id) if document_id else None
        return document, self._workspace(who)

    def edit_page(self, who: Who, document_id: str, html: Optional[str] = None) -> EditPage:
        """The editor, with the latest HTML (or `html`, what the person typed and
        could not save) when the plan includes dashboard editing."""
        document = self.documents.get(who, document_id)
        workspace = self._workspace(who)
        if html is None and workspace.entitlements.dashboard_editing:
            html = self.documents.get(who, document_id, include_html=True).html
        return EditPage(document=document, workspace=workspace, html=html)

    # ---------------------------------------------------------------- feedback

    def inbox(self, who: Who, status: Optional[str] = None, document_id: Optional[str] = None,
              cursor: Optional[str] = None) -> Inbox:
        """A page of the inbox. An unknown status shows open feedback, and a filter
        that names no document shows all (a link typed by hand is not an error)."""
        status = status if status in STATUSES else "open"
        document_id = access.canonical_document_id(document_id) if access.well_formed_id(document_id) else None
        page = self.feedback.inbox(who, document_id=document_id, status=status, limit=INBOX_PAGE, cursor=cursor)
        named = self.documents.summaries(who, sorted({item.feedback.document_id for item in page.items}))
        entries = [InboxEntry(feedback=item.feedback, document=named.get(item.feedback.document_id),
                              version_number=item.version_number if item.feedback.document_id in named else None)
                   for item in page.items]
        documents = self.documents.list(who, FILTER_DOCUMENTS).documents
        return Inbox(entries=entries, documents=documents, status=status, document_id=document_id,
                     next_cursor=page.next_cursor)

    # ---------------------------------------------------------------- workspace

    def keys_page(self, who: Who) -> KeysPage:
        workspace_id = access.actor(self.documents.ctx, who).workspace_id
        listed = self.workspaces.list_keys(workspace_id, by=who)
        return KeysPage(workspace=self.workspaces.get_workspace(workspace_id), keys=listed,
                        active_count=sum(1 for k in listed if not k["revoked"]))

    def workspace_page(self, who: Who) -> WorkspacePage:
        workspace_id = access.actor(self.documents.ctx, who).workspace_id
        # Keys are the editors' business: a viewer's page counts them from the workspace record.
        workspace = self.workspaces.get_workspace(workspace_id)
        if roles.allows(access.role_of(who), "list_keys"):
            key_count = sum(1 for k in self.workspaces.list_keys(workspace_id, by=who) if not k["revoked"])
        else:
            stored = self.documents.ctx.workspaces.get(workspace_id)
            key_count = stored.key_count if stored is not None else 0
        return WorkspacePage(workspace=workspace, key_count=key_count,
                             most_viewed=self.views.most_viewed(who))

    def _workspace(self, who: Who) -> Workspace:
        return self.workspaces.get_workspace(access.actor(self.documents.ctx, who).workspace_id)

