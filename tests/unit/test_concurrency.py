"""Concurrent writers through the service layer (threads, emulated storage).

Publishes and edits racing on one document: every acknowledged version is
stored, numbered without gaps, readable with the content that was
acknowledged, and no edit is lost. (Against moto this also needs
tests.moto_isolation.serialize_emulated_dynamodb: without it moto's
transactions wipe each other's commits.)
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from chalicelib.errors import VersionConflict
from chalicelib.models import EditOperation, EditRequest, PublishRequest
from chalicelib.services.auth import credentials_from_key

END = "<!--end-->"


def test_racing_edits_and_publishes_lose_nothing(services):
    ws, created = services.workspaces.create_workspace("Race", "pro")
    keys = [created.api_key] + [services.workspaces.create_key(ws.id, f"k{i}").api_key for i in range(5)]
    docs = services.documents
    first = docs.publish(credentials_from_key(keys[0]), PublishRequest(title="Race", html=f"<main>{END}</main>"))
    document_id = first.response.document_id
    markers: list[str] = []
    published: list[tuple[str, str]] = []
    lock = threading.Lock()

    def writer(index: int) -> None:
        who = credentials_from_key(keys[index % len(keys)])
        for n in range(6):
            marker = f"<p>w{index} n{n}</p>"
            try:
                result = docs.edit(who, document_id, EditRequest(
                    edits=[EditOperation(old_string=END, new_string=marker + END)]))
            except VersionConflict:
                continue  # the contract allows 409 after repeated races; it stored nothing
            with lock:
                markers.append(marker)
                published.append((result.response.version_id, marker))

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(writer, range(6)))

    detail = docs.get(credentials_from_key(keys[0]), document_id, include_html=True)
    assert detail.version_count == len(markers) + 1
    assert [v.number for v in detail.versions] == list(range(1, detail.version_count + 1))
    assert all(m in detail.html for m in markers), "an acknowledged edit was lost"
    for version_id, marker in published:
        html = docs.get(credentials_from_key(keys[0]), document_id, True, version_id).html
        assert marker in html
    assert len(markers) >= 18  # most writes got through
