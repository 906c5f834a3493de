"""Activity lines in DynamoDB: written by the people repository and, inside a version's
transaction, by the documents repository (kept apart from people.py, so the documents
repository loads nothing of members and tokens)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from chalicelib.adapters.aws.keys import activity_pk
from chalicelib.ports.records import fields_of

if TYPE_CHECKING:
    from chalicelib.ports.records import ActivityEntry


def activity_item(entry: ActivityEntry) -> dict:
    """The item of an activity entry (also written inside a version's transaction)."""
    return {"PK": activity_pk(entry.workspace_id), "SK": f"{entry.created_ms:015d}#{entry.activity_id}",
            **fields_of(entry), "detail": dict(entry.detail)}
