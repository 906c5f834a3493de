"""Suggested edits (contract 7e): accepting one applies it as one literal edit of the
latest version and resolves its thread "in version N", in one write.

The edit goes through DocumentService's edit path (the same engine, limits, rate
slots, quota, optimistic concurrency and errors as `POST .../edit`); the thread is
resolved in the same transaction as the new version (DocumentRepository.append_version
`resolves`), on the condition that it is still open. So a failed accept changes
neither the document nor the thread, and of two concurrent accepts exactly one
writes a version: the other finds the thread resolved (409 already_resolved).
Rejecting is resolving without applying (FeedbackService.resolve).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Optional, Sequence

from chalicelib.domain.suggestions import literal_edit
from chalicelib.errors import AlreadyResolved, DocpubError, ValidationFailed
from chalicelib.models import EditRequest, SuggestionAccepted, AcceptedVersion
from chalicelib.ports import FeedbackGone
from chalicelib.ports.records import Document, Resolution, Version
from chalicelib.services import access
from chalicelib.services.access import Who, requires
from chalicelib.services.activity import actor_of
from chalicelib.services.context import Context
from chalicelib.services.documents import DocumentService
from chalicelib.services.events import make_event
from chalicelib.services.feedback import FeedbackService, event_payload

NOTE_NAME_CHARS = 100


def _accepter(who: Who) -> str:
    kind, actor, _surface = actor_of(who)
    return {"member": actor, "oauth_client": f"app {actor}", "api_key": f"API key {actor}"}.get(kind, actor)


@dataclass
class Accepted:
    """An accept's answer plus the rate-limit headers it earned (an accept is an edit)."""
    response: SuggestionAccepted
    headers: dict[str, str] = field(default_factory=dict)


class SuggestionService:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.feedback = FeedbackService(ctx)
        self.documents = DocumentService(ctx)

    @requires("accept_suggestion")
    def accept(self, who: Who, feedback_id: str, base_version_id: Optional[str] = None,
               allow_secrets: Optional[bool] = None) -> Accepted:
        actor = access.actor(self.ctx, who)
        try:
            return self._accept(actor, feedback_id, base_version_id, allow_secrets)
        except DocpubError as exc:  # refusals carry X-RateLimit-* like every edit answer (section 4)
            if "X-RateLimit-Limit" not in exc.headers:
                exc.headers.update(self.documents.rate_limit_headers(actor.key_item))
            raise

    def _accept(self, actor: access.Actor, feedback_id: str, base_version_id: Optional[str],
                allow_secrets: Optional[bool] = None) -> Accepted:
        item = self.feedback.thread(actor.workspace_id, feedback_id)
        if item.suggestion is None or not item.anchor:
            raise ValidationFailed.field("feedback_id", "this feedback carries no suggestion to accept")
        if item.status == "resolved":
            raise self._already(item.resolved_in_version)
        anchor, replacement = dict(item.anchor), str(item.suggestion.get("replacement", ""))
        suggested_by = (item.name or "a viewer")[:NOTE_NAME_CHARS]
        note = f"Accepted the suggestion of {suggested_by} ({feedback_id}), by {_accepter(actor)}"

        def edits_for(fmt: str, source: bytes) -> Sequence[Any]:
            return [literal_edit(source.decode("utf-8"), anchor, replacement, page=fmt != "markdown")]

        def resolves(doc: Document, version: Version) -> Resolution:
            after = replace(item, status="resolved", resolved_ms=version.created_ms,
                            resolved_in_version=version.number)
            model = self.feedback.answers([after])[0]
            event = make_event("feedback.resolved", item.workspace_id, item.document_id, version.created_ms,
                               event_payload(model), feedback_id=feedback_id)
            return Resolution(feedback=item, event=event)

        request = EditRequest.model_construct(edits=[], note=note, base_version_id=base_version_id,
                                              allow_secrets=allow_secrets)
        detail = {"suggestion": feedback_id, "suggested_by": suggested_by}
        try:
            result = self.documents.edit_resolving(actor, item.document_id, request, edits_for, resolves, detail)
        except (FeedbackGone, DocpubError):
            # Another accept (or a resolve) may have won meanwhile: its new version no longer
            # holds the passage, or the thread's condition failed. Either way, say so.
            now = self.feedback.thread(actor.workspace_id, feedback_id)
            if now.status == "resolved":
                raise self._already(now.resolved_in_version) from None
            raise
        edited = result.response
        after = self.feedback.thread(actor.workspace_id, feedback_id)
        return Accepted(SuggestionAccepted(
            feedback=self.feedback.answers([after])[0],
            document=AcceptedVersion(document_id=edited.document_id, version_id=edited.version_id,
                                     version_number=edited.version_number, share_url=edited.share_url),
            warnings=edited.warnings),
            result.headers)

    @staticmethod
    def _already(version_number: Optional[int]) -> AlreadyResolved:
        return AlreadyResolved(
            "This suggestion is already resolved" + (f" (accepted in version {version_number})"
                                                    if version_number else " (rejected or resolved by hand)")
            + "; reopen it with resolve_feedback(resolved=false) to accept it after all.")
