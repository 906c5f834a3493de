"""Roles in a workspace (contract 7d) and what each may do: one table.

- `viewer` reads documents and feedback (and comments on share pages, as anyone may);
- `editor` also changes documents, share settings, API keys and feedback status;
- `owner` also manages members, the plan and the workspace's name and branding.

An API key acts with the role its creator has *now* (a removal revokes it), and
so does an OAuth grant with its approver's (a viewer's grant holds `docs:read`
and `feedback` only), so a demotion or a removal takes effect on the next
request of every surface. A workspace key (made by the operator, or before keys
had creators) acts as the owner: `API_KEY_ROLE`.

`OPERATIONS` names every operation any surface can perform and the least role
it needs; services check it once (services/access.py `authorize`), and
tests/http/test_roles.py proves that every REST route, MCP tool and dashboard form is
one of these operations.
"""
from __future__ import annotations

from typing import Optional

ROLES = ("viewer", "editor", "owner")  # ascending
API_KEY_ROLE = "owner"  # a workspace key's (services/access.key_role)

OPERATIONS: dict[str, str] = {
    # documents
    "publish_document": "editor",
    "edit_document": "editor",
    "update_document": "editor",
    "delete_document": "editor",
    "restore_version": "editor",
    "delete_version": "editor",
    "get_document": "viewer",
    "list_versions": "viewer",
    "get_provenance": "viewer",
    "download_document": "viewer",
    "create_upload": "editor",  # the first step of a large publish
    "list_documents": "viewer",
    "find_document": "viewer",
    "get_document_stats": "viewer",
    "diff_versions": "viewer",
    # share settings
    "rotate_share_link": "editor",
    "set_passphrase": "editor",
    "clear_passphrase": "editor",
    "list_recipients": "viewer",  # who opened a recipients link (contract 7f)
    "revoke_recipient": "editor",
    # feedback
    "list_feedback": "viewer",
    "wait_for_feedback": "viewer",
    "resolve_feedback": "editor",
    "reply_to_feedback": "editor",  # the owner's side; viewers reply on share pages like anyone
    "accept_suggestion": "editor",  # applies a suggested edit: a new version (contract 7e)
    # reviews (contract 7e): members of any role review; asking for reviews is an editor's
    "submit_review": "viewer",
    "list_reviews": "viewer",
    "wait_for_review": "viewer",
    "request_review": "editor",
    # webhooks (workspace settings, like keys)
    "create_webhook": "editor",
    "list_webhooks": "editor",
    "delete_webhook": "editor",
    "test_webhook": "editor",
    "rotate_webhook_secret": "editor",
    "list_webhook_deliveries": "editor",
    # workspace
    "get_workspace_info": "viewer",
    "list_activity": "viewer",
    "list_keys": "editor",
    "create_key": "editor",
    "revoke_key": "editor",
    "list_apps": "editor",
    "disconnect_app": "editor",
    "approve_app": "viewer",  # the grant gets no more than the approver's role allows
    "set_branding": "owner",
    "update_workspace": "owner",  # scanning settings (contract 7g)
    "start_export": "owner",  # a zip of everything the workspace holds (contract 7g)
    "get_export": "owner",
    "set_plan": "owner",
    # members
    "list_members": "viewer",
    "invite_member": "owner",
    "revoke_invite": "owner",
    "set_member_role": "owner",
    "remove_member": "owner",
}

# The OAuth scopes a role may hold (services/oauth.py SCOPES).
ROLE_SCOPES = {
    "viewer": ("docs:read", "feedback"),
    "editor": ("docs:read", "docs:write", "feedback"),
    "owner": ("docs:read", "docs:write", "feedback"),
}

ARTICLES = {"owner": "an", "editor": "an", "viewer": "a"}
DESCRIPTIONS = {
    "owner": "everything, including members, plan and branding",
    "editor": "documents, share settings, API keys and feedback",
    "viewer": "reads documents and feedback",
}


def rank(role: Optional[str]) -> int:
    return ROLES.index(role) if role in ROLES else -1


def allows(role: Optional[str], operation: str) -> bool:
    """Does `role` allow `operation`? An operation missing from the table is refused (fail closed)."""
    needed = OPERATIONS.get(operation)
    return needed is not None and rank(role) >= rank(needed)


def lesser(a: str, b: str) -> str:
    return a if rank(a) <= rank(b) else b
