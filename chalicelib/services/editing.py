"""What the dashboard does to documents beyond plain publish/get/update/delete:
upload a file, Pro in-browser editing, restore a version, compare two versions.

All of it goes through DocumentService.publish (so the 4 MiB rule, plan caps and
optimistic concurrency are the same as for REST and MCP); the Pro rule for
in-dashboard editing lives here, not in the adapter.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from pydantic import ValidationError

from chalicelib.ports.records import Document, Version
from chalicelib.domain import plans
from chalicelib.domain.diffs import LineDiff, line_diff
from chalicelib.domain import limits
from chalicelib.domain.limits import encoded_html
from chalicelib.errors import FeatureNotInPlan, NoChange, ValidationFailed
from chalicelib.models import PublishRequest
from chalicelib.services import access
from chalicelib.services.access import Who
from chalicelib.services.context import Context
from chalicelib.services.document_writes import WriteResult
from chalicelib.services.documents import DocumentService
from chalicelib.services.access import requires

FEATURE_MESSAGES = {
    "dashboard_editing": "Editing in the dashboard is a Pro feature; upload a new version instead, "
                         "or ask your operator to move this workspace to Pro.",
}


@dataclass(frozen=True)
class VersionPair:
    document: Document
    old: Version
    new: Version
    diff: LineDiff


def publish_request(**fields: Any) -> PublishRequest:
    """A PublishRequest from adapter fields, with the contract's validation error."""
    try:
        return PublishRequest.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        raise ValidationFailed.from_pydantic(exc.errors(include_url=False, include_input=False)) from None


def require_feature(ctx: Context, workspace_id: str, feature: str) -> None:
    workspace = ctx.workspaces.get(workspace_id)
    plan = workspace.plan if workspace is not None else "free"
    if not getattr(plans.entitlements(plan), feature):
        raise FeatureNotInPlan(FEATURE_MESSAGES.get(feature, f"{feature} is a Pro feature."),
                               {"feature": feature})


class EditingService:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.documents = DocumentService(self.ctx)

    @requires("publish_document")
    def upload(self, who: Who, data: Optional[bytes], title: Optional[str] = None, note: Optional[str] = None,
               document_id: Optional[str] = None, description: Optional[str] = None,
               filename: Optional[str] = None, upload_id: Optional[str] = None,
               allow_secrets: bool = False) -> WriteResult:
        """Publish an uploaded file as a new document, or as a new version of `document_id`
        (keeping its title when none is given): HTML, Markdown (.md/.markdown) or a .zip
        bundle, by the file's name. Same rules and messages as publish. A file too large
        for one request was sent to storage first (POST /dashboard/uploads, then a PUT to
        its upload_url): `upload_id` names it, in place of `data`, as on the API."""
        name = (filename or "").lower()
        if upload_id is not None or data is None:
            if data is not None or not upload_id:
                raise ValidationFailed.field("file", "choose a file to upload (.html, .md or .zip)")
            title = (title or "").strip() or None
            if document_id and title is None:
                title = self.documents.get(who, document_id).title
            return self.documents.publish(who, publish_request(
                title=title, note=note or None, document_id=document_id,
                description=description if description else None,
                allow_secrets=allow_secrets or None, upload_id=upload_id))
        if name.endswith((".md", ".markdown", ".zip")):
            title = (title or "").strip() or None
            if document_id and title is None:
                title = self.documents.get(who, document_id).title
            return self.documents.publish(who, publish_request(
                title=title, note=note or None, document_id=document_id,
                description=description if description else None,
                allow_secrets=allow_secrets or None), upload=(filename or "", data))
        if filename and not name.endswith((".html", ".htm")):
            raise ValidationFailed.field("file", "must be .html, .htm, .md, .markdown or .zip")
        if len(data) > limits.HTML_BYTES:
            encoded_html(data.decode("utf-8", "replace"))  # raises the contract's 413
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        if not data.strip():
            raise ValidationFailed.field("file", "choose a non-empty HTML file")
        try:
            html = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationFailed.field("file", "must be UTF-8 encoded HTML") from None
        title = (title or "").strip() or None
        if document_id and title is None:
            title = self.documents.get(who, document_id).title
        return self.documents.publish(who, publish_request(
            title=title, html=html, note=note or None, document_id=document_id,
            description=description if description else None,
                allow_secrets=allow_secrets or None))

    @requires("edit_document")
    def save_html(self, who: Who, document_id: str, html: str, note: Optional[str] = None,
                  base_version_id: Optional[str] = None, allow_secrets: bool = False) -> WriteResult:
        """Pro: store HTML edited in the browser as a new version (409 if someone published meanwhile)."""
        actor = access.actor(self.ctx, who)
        require_feature(self.ctx, actor.workspace_id, "dashboard_editing")
        document = self.documents.get(actor, document_id)
        return self.documents.publish(actor, publish_request(
            title=document.title, html=html, note=note or None, document_id=document_id,
            base_version_id=base_version_id or None, allow_secrets=allow_secrets or None))

    @requires("restore_version")
    def restore_version(self, who: Who, document_id: str, number: int) -> WriteResult:
        """Publish an older version's HTML again, as the newest version."""
        actor = access.actor(self.ctx, who)
        found = access.find_document(self.ctx, actor, document_id)
        if number == found.document.version_count:
            raise NoChange(f"Version {number} is already the latest version.")
        # As it was: its page, its Markdown source and its files.
        return self.documents.restore(actor, found.id, number, f"Restored version {number}",
                                      base_version_id=found.document.latest_version_id)

    @requires("diff_versions")
    def compare(self, who: Who, document_id: str, old_number: Optional[int] = None,
                new_number: Optional[int] = None) -> VersionPair:
        """Two versions and their line diff; a number left out: the latest version, and the
        one before the newer version."""
        actor = access.actor(self.ctx, who)
        old_number, new_number = self.documents.comparable_numbers(actor, document_id, old_number, new_number)
        document, old, old_html = self.documents.get_html(actor, document_id, old_number)
        _, new, new_html = self.documents.get_html(actor, document_id, new_number)
        return VersionPair(document, old, new, line_diff(old_html, new_html))
