"""Issue 15 (hardening): each finding of the adversarial review, as a test that
fails on the code before the fix."""
from __future__ import annotations

import json
import tracemalloc
from types import SimpleNamespace

import pytest

from chalicelib.domain.edits import apply_edits, apply_edits_utf8
from chalicelib.errors import DocumentTooLarge
from chalicelib.models import MAX_HTML_BYTES
from tests.helpers import post_json

MIB = 1024 * 1024


def E(old, new, replace_all=False):
    return SimpleNamespace(old_string=old, new_string=new, replace_all=replace_all)


# ------------------------------------------------------------------ 1. bounded edits

def test_an_edit_that_would_grow_past_the_limit_stops_at_that_edit_with_its_own_size():
    doc = b"a" * MIB
    with pytest.raises(DocumentTooLarge) as info:
        apply_edits_utf8(doc, [E("a", "b", True), E("b", "ccccc", True), E("nowhere", "x")])
    assert info.value.details == {"limit_bytes": MAX_HTML_BYTES, "size_bytes": 5 * MIB, "edit_index": 1}


def test_the_size_check_counts_utf8_bytes_on_every_route_of_the_engine():
    # More than 8 edits on non-ASCII text goes through str; sizes are still bytes.
    doc = ("é" * (MIB // 2)).encode()  # 1 MiB of UTF-8, 512 Ki characters
    edits = [E("é", "éé", True), E("é", "€", True)] + [E("€", "€€", True)] * 8
    with pytest.raises(DocumentTooLarge) as info:
        apply_edits_utf8(doc, edits)
    # é→éé: 2 MiB; é→€ (2→3 bytes each, 1 Mi characters): 3 MiB; €→€€: 6 MiB at edit 2.
    assert info.value.details["edit_index"] == 2
    assert info.value.details["size_bytes"] == 6 * MIB
    with pytest.raises(DocumentTooLarge) as info:
        apply_edits("é" * (MIB // 2), [E("é", "éééééééé", True)])
    assert info.value.details == {"limit_bytes": MAX_HTML_BYTES, "size_bytes": 8 * MIB, "edit_index": 0}


def test_a_single_replacement_past_the_limit_is_refused_before_it_is_built():
    doc = b"<p>SLOT</p>" + b"x" * (MAX_HTML_BYTES - 20)
    with pytest.raises(DocumentTooLarge) as info:
        apply_edits_utf8(doc, [E("SLOT", "S" * 100)])
    assert info.value.details["size_bytes"] == len(doc) + 96
    assert info.value.details["edit_index"] == 0


def test_edit_peak_memory_stays_within_a_small_multiple_of_the_limit(services):
    # The review's request: replace every "a" of a large document with 50 b's.
    # Before the fix this built a 100 MiB result before answering 413.
    key = services.workspaces.create_workspace("Pro", "pro")[1].api_key
    from chalicelib.models import EditRequest, PublishRequest
    from chalicelib.services.auth import credentials_from_key

    who = credentials_from_key(key)
    published = services.documents.publish(who, PublishRequest(title="Big", html="a" * (2 * MIB))).response
    request = EditRequest.model_validate({"edits": [{"old_string": "a", "new_string": "b" * 50,
                                                     "replace_all": True}]})
    tracemalloc.start()
    try:
        with pytest.raises(DocumentTooLarge) as info:
            services.documents.edit(who, published.document_id, request)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.details["size_bytes"] == 100 * MIB and info.value.details["edit_index"] == 0
    assert peak < 4 * MAX_HTML_BYTES, f"peak {peak / MIB:.1f} MiB"


def test_rest_413_for_an_edit_names_the_edit_and_its_size(api, services):
    key = services.workspaces.create_workspace("Pro", "pro")[1].api_key
    r = post_json(api, "/api/v1/publish", {"title": "Doc", "html": "<p>" + "a" * 4096 + "</p>"}, key)
    doc = json.loads(r.body)
    body = {"edits": [{"old_string": "<p>", "new_string": "<p>x"},
                      {"old_string": "a", "new_string": "b" * 2000, "replace_all": True}]}
    r = post_json(api, f"/api/v1/documents/{doc['document_id']}/edit", body, key)
    assert r.status_code == 413
    error = json.loads(r.body)["error"]
    assert error["code"] == "document_too_large"
    assert error["details"] == {"limit_bytes": MAX_HTML_BYTES, "edit_index": 1,
                                "size_bytes": 4096 * 2000 + len("<p>x</p>")}
