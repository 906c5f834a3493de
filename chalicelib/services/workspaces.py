"""Workspaces, plans and API keys."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, Optional, cast

from chalicelib.ports.records import ApiKey, Workspace as WorkspaceRecord
from chalicelib.ports import KeyCapReached
from chalicelib.domain import limits, plans
from chalicelib.errors import FeatureNotInPlan, NotFound, PlanLimitReached, ValidationFailed
from chalicelib.models import KeyInfo, MeResponse, PiiScanning, SecretScanning, UpdateWorkspaceRequest, Usage, Workspace
from chalicelib.services import auth, ratelimits
from chalicelib.services.context import Context, new_workspace_id, rfc3339
from chalicelib.services import access, activity, scanning, static_pages
from chalicelib.services.access import Who, requires

PlanName = Literal["free", "pro"]
MAX_WORKSPACE_NAME = 100
MAX_KEY_NAME = 100
MAX_BRAND_NAME = 80
MAX_BRAND_TAGLINE = 200


@dataclass(frozen=True)
class CreatedKey:
    key_id: str
    api_key: str  # shown once; only its hash is stored
    workspace_id: str
    name: str


@dataclass(frozen=True)
class UpgradePath:
    """What a person can do to move a workspace to Pro (issue 29): a billing link when the
    service has one (DOCPUB_UPGRADE_URL), the operator command for the people who run the
    service (DOCPUB_OPERATOR_EMAILS), and otherwise: ask the administrator."""
    url: Optional[str]
    command: Optional[str]


def upgrade_path(workspace_id: str, email: Optional[str]) -> UpgradePath:
    from urllib.parse import quote

    from chalicelib import config

    link = config.upgrade_url()
    operators = config.operator_emails()
    is_operator = bool(email) and ("*" in operators or email.strip().lower() in operators)  # type: ignore[union-attr]
    where = "--aws " if config.storage() == "aws" else ""
    return UpgradePath(url=link.replace("{workspace_id}", quote(workspace_id, safe="")) if link else None,
                       command=f'make -s admin ARGS="{where}set-plan {workspace_id} pro"' if is_operator else None)


def upgrade_offer(workspace_id: str) -> tuple[str, dict[str, str]]:
    """How an API or MCP refusal of a plan limit says to upgrade: (words, extra details).
    The billing link when the service has one (DOCPUB_UPGRADE_URL), as `upgrade_url` too;
    otherwise the workspace's administrator (an API key is not a person, so no operator
    command here: the dashboard shows it to operators)."""
    path = upgrade_path(workspace_id, None)
    if path.url:
        return f"upgrade to Pro at {path.url}", {"upgrade_url": path.url}
    return "ask the workspace's administrator to upgrade it to Pro", {}


def workspace_model(item: WorkspaceRecord, pending_upload_bytes: int = 0) -> Workspace:
    """The workspace as answered; `storage_bytes` counts the pending uploads' declared
    sizes too (contract 4: from creation until published or expired)."""
    return Workspace(
        id=item.workspace_id, name=item.name, brand_name=item.brand_name,
        brand_tagline=item.brand_tagline, plan=cast(PlanName, item.plan),  # one of plans.PLANS (set_plan checks)
        document_count=item.document_count,
        entitlements=plans.entitlements(item.plan),
        usage=Usage(documents=item.document_count, versions=max(0, item.version_total),
                    storage_bytes=max(0, item.storage_bytes) + pending_upload_bytes,
                    pending_upload_bytes=pending_upload_bytes),
        secret_scanning=cast(SecretScanning, item.secret_scanning or scanning.DEFAULT_SECRET_MODE),
        pii_scanning=cast(PiiScanning, item.pii_scanning or scanning.DEFAULT_PII_MODE),
    )


def key_summary(item: ApiKey) -> dict[str, Any]:
    """What the dashboard's key list shows of a key (never its hash)."""
    return {"key_id": item.key_id, "name": item.name, "prefix": item.prefix or "",
            "created_at": rfc3339(item.created_ms), "last_used_at": rfc3339(item.last_used_at),
            "revoked": item.revoked_at is not None, "created_by": item.created_by}


class WorkspaceService:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def authenticate(self, credentials: auth.Credentials) -> ApiKey:
        """The verified key for presented credentials: the key, and its creator's
        membership for a member's key (a removed member's key is 401 here too)."""
        key = access.actor(self.ctx, credentials).key_item
        assert key is not None  # credentials always verify to a key
        return key

    @requires("get_workspace_info")
    def me(self, who: Who) -> MeResponse:
        """The caller's workspace: `who` is API-key credentials or an authenticated Actor;
        with a key, whose key it is and the role it acts with now."""
        acting = access.actor(self.ctx, who)
        key = acting.key_item
        return MeResponse(workspace=self.get_workspace(acting.workspace_id),
                          key=KeyInfo(key_id=key.key_id, created_by=key.created_by,
                                      role=cast(Literal["owner", "editor", "viewer"], acting.role))
                          if key is not None else None)

    @requires("update_workspace")
    def update_settings(self, who: Who, request: UpdateWorkspaceRequest) -> MeResponse:
        """The owner's workspace settings: secret and PII scanning (contract 7g)."""
        actor = access.actor(self.ctx, who)
        fields: dict[str, Any] = {name: value for name, value in (
            ("secret_scanning", request.secret_scanning), ("pii_scanning", request.pii_scanning))
            if value is not None}
        if not fields:
            raise ValidationFailed.field("body", "give secret_scanning and/or pii_scanning")
        if self.ctx.workspaces.get(actor.workspace_id) is None:
            raise NotFound("No such workspace.")
        self.ctx.workspaces.set_fields(actor.workspace_id, fields)  # type: ignore[arg-type]
        activity.record(self.ctx, actor, actor.workspace_id, "workspace.scanning", actor.workspace_id, fields)
        return self.me(actor)  # as GET /api/v1/me answers

    def get_workspace(self, workspace_id: str) -> Workspace:
        item = self.ctx.workspaces.get(workspace_id)
        if item is None:
            raise NotFound("No such workspace.")
        return self._model(item)

    def _model(self, item: WorkspaceRecord) -> Workspace:
        from chalicelib.services.pending_uploads import pending_uploads

        pending = sum(x.weight for x in pending_uploads(self.ctx, item.workspace_id, self.ctx.now_ms()))
        return workspace_model(item, pending)

    def create_workspace(self, name: str, plan: str = "free", workspace_id: Optional[str] = None,
                         with_key: bool = True, api_key: Optional[str] = None) -> tuple[Workspace, Optional[CreatedKey]]:
        name = (name or "").strip()
        if not name or len(name) > MAX_WORKSPACE_NAME:
            raise ValidationFailed.field("name", f"must be 1 to {MAX_WORKSPACE_NAME} characters")
        self._check_plan(plan)
        workspace_id = workspace_id or new_workspace_id()
        self.ctx.workspaces.create(WorkspaceRecord(workspace_id=workspace_id, name=name, plan=plan,
                                                   created_ms=self.ctx.now_ms()))
        key = self.create_key(workspace_id, "default", api_key=api_key, operator=True) if with_key else None
        return self.get_workspace(workspace_id), key

    def _as(self, by: Optional[Who], operation: str, workspace_id: str) -> Who:
        """The caller of a workspace operation: `by` (role-checked, its own workspace
        only), or the operator when None (make admin, make run, the service itself)."""
        who = by if by is not None else access.operator(workspace_id)
        access.authorize(who, operation)
        access.same_workspace(who, workspace_id)
        return who

    def set_plan(self, workspace_id: str, plan: str, by: Optional[Who] = None) -> Workspace:
        who = self._as(by, "set_plan", workspace_id)
        self._check_plan(plan)
        if self.ctx.workspaces.get(workspace_id) is None:
            raise NotFound("No such workspace.")
        changed = self._model(self.ctx.workspaces.set_plan(workspace_id, plan))
        activity.record(self.ctx, who, workspace_id, "workspace.plan", workspace_id, {"plan": plan})
        static_pages.sync_workspace(self.ctx, workspace_id, "plan")  # the Docpub mark comes or goes
        return changed

    def create_key(self, workspace_id: str, name: str = "default", api_key: Optional[str] = None,
                   operator: bool = False, by: Optional[Who] = None) -> CreatedKey:
        """A new key (shown once). Self-service creations (the dashboard) are limited to
        KEYS_CREATED_PER_WORKSPACE; the operator's CLI is not (`operator`). `by`: the
        member asking (role-checked), else the operator."""
        who = self._as(by, "create_key", workspace_id)
        name = (name or "").strip() or "default"
        if len(name) > MAX_KEY_NAME:
            raise ValidationFailed.field("name", f"must be at most {MAX_KEY_NAME} characters")
        workspace = self.ctx.workspaces.get(workspace_id)
        if workspace is None:
            raise NotFound("No such workspace.")
        if not operator:
            ratelimits.hit(self.ctx, ratelimits.scope_key("key-creation", workspace_id),
                           limits.KEYS_CREATED_PER_WORKSPACE, limits.REFUSALS["key-creation"])
        secret = api_key or auth.generate_api_key()
        credentials = auth.credentials_from_key(secret)
        max_keys = plans.entitlements(workspace.plan).max_api_keys
        # A member's key is theirs (it acts with their role, and dies with their membership);
        # the operator's belongs to the workspace.
        creator = who.member if isinstance(who, access.Actor) and who.surface != "cli" else None
        record = ApiKey(key_id=credentials.key_id, key_hash=credentials.key_hash, workspace_id=workspace_id,
                        name=name, prefix=auth.display_prefix(secret), created_ms=self.ctx.now_ms(),
                        created_by=creator)
        try:
            self.ctx.keys.create(record, max_keys)
        except KeyCapReached as exc:
            current = exc.workspace.key_count if exc.workspace is not None else max_keys
            upgrade, extra = upgrade_offer(workspace_id)
            raise PlanLimitReached(
                f"The free plan allows {max_keys} API key; revoke it, or {upgrade} for more.",
                {"limit": max_keys, "current": current, **extra}) from exc
        activity.record(self.ctx, who, workspace_id, "key.create", credentials.key_id, {"name": name})
        return CreatedKey(credentials.key_id, secret, workspace_id, name)

    def revoke_key(self, key_id: str, workspace_id: Optional[str] = None, by: Optional[Who] = None) -> dict[str, Any]:
        # Ids we never issue are 404 without a lookup (DynamoDB refuses keys over 2 KB).
        if by is not None:
            workspace_id = by.workspace_id if isinstance(by, access.Actor) else workspace_id
            self._as(by, "revoke_key", workspace_id)  # type: ignore[arg-type]  # the role first: a viewer learns nothing of keys
        item = self.ctx.keys.get(key_id) if re.fullmatch(r"key_[0-9a-f]{20}", key_id or "") else None
        if item is None or (workspace_id is not None and item.workspace_id != workspace_id):
            raise NotFound("No such API key.")
        who = self._as(by, "revoke_key", item.workspace_id)
        revoked = key_summary(self.ctx.keys.revoke(key_id, self.ctx.now_ms()) or item)
        activity.record(self.ctx, who, item.workspace_id, "key.revoke", key_id, {"name": item.name})
        return revoked

    def list_keys(self, workspace_id: str, by: Optional[Who] = None) -> list[dict[str, Any]]:
        self._as(by, "list_keys", workspace_id)
        return [key_summary(i) for i in self.ctx.keys.list_for_workspace(workspace_id)]

    def set_branding(self, workspace_id: str, brand_name: Optional[str],
                     brand_tagline: Optional[str], by: Optional[Who] = None) -> Workspace:
        """Pro: the name and tagline share pages show. Empty values clear them."""
        who = self._as(by, "set_branding", workspace_id)
        item = self.ctx.workspaces.get(workspace_id)
        if item is None:
            raise NotFound("No such workspace.")
        if not plans.entitlements(item.plan).custom_branding:
            raise FeatureNotInPlan("Custom branding is a Pro feature.", {"feature": "custom_branding"})
        name = (brand_name or "").strip()
        tagline = (brand_tagline or "").strip()
        fields = []
        if len(name) > MAX_BRAND_NAME:
            fields.append({"field": "brand_name", "message": f"must be at most {MAX_BRAND_NAME} characters"})
        if len(tagline) > MAX_BRAND_TAGLINE:
            fields.append({"field": "brand_tagline",
                           "message": f"must be at most {MAX_BRAND_TAGLINE} characters"})
        if tagline and not name:
            fields.append({"field": "brand_name", "message": "is required when a tagline is set"})
        if fields:
            raise ValidationFailed(f"{fields[0]['field']}: {fields[0]['message']}", {"fields": fields})
        changed = self._model(self.ctx.workspaces.set_fields(
            workspace_id, {"brand_name": name or None, "brand_tagline": tagline or None}))
        activity.record(self.ctx, who, workspace_id, "workspace.branding", workspace_id,
                        {"brand_name": name or None})
        static_pages.sync_workspace(self.ctx, workspace_id, "branding")
        return changed

    @staticmethod
    def _check_plan(plan: str) -> None:
        if plan not in plans.PLANS:
            raise ValidationFailed.field("plan", "must be 'free' or 'pro'")
