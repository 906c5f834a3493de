"""`anchor_state` of anchored feedback (contract 7e): where each comment's passage is in
its document's latest version (domain/anchoring.py decides; this module reads and caches).

Computed once per version: a version never changes, so its text (one blob read) and
each anchor's state in it are kept in small in-process caches keyed by version id; a
listing of 100 threads on one document costs one document read and, the first time
only, one blob read and the re-anchoring (bench/reanchor.py: 100 comments on 4 MiB
well under a second).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Hashable, Mapping, Optional, Sequence

from chalicelib.domain.anchoring import Found, Text, locate
from chalicelib.models import AnchorState
from chalicelib.ports import BlobNotFound, version_key
from chalicelib.ports.records import Document, Feedback
from chalicelib.services.context import Context

TEXTS_KEPT = 3  # versions' texts (a 4 MiB page is ~8 MiB of str with its folded copy)
STATES_KEPT = 20_000
TEXTS_PER_CALL = 10  # latest versions' pages one answer may read (the rest: anchor_state null)

class _Lru:
    def __init__(self, size: int):
        self.size = size
        self.items: OrderedDict[Hashable, object] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Hashable) -> Optional[object]:
        with self.lock:
            value = self.items.get(key)
            if value is not None:
                self.items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: object) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)


_texts = _Lru(TEXTS_KEPT)
_states = _Lru(STATES_KEPT)


def clear_caches() -> None:
    for cache in (_texts, _states):
        with cache.lock:
            cache.items.clear()


def version_text(ctx: Context, doc: Document, version_id: str) -> Optional[Text]:
    """The version's text as viewers select it; None when its page is missing."""
    key = (doc.document_id, version_id)
    cached = _texts.get(key)
    if isinstance(cached, Text):
        return cached
    try:
        page = ctx.blobs.get_html(version_key(doc.workspace_id, doc.document_id, version_id))
    except BlobNotFound:
        return None
    text = Text.of_html(page.decode("utf-8", "replace"))
    _texts.put(key, text)
    return text


def state_in(text: Text, version_id: str, anchor: dict[str, Any]) -> Found:
    key = (version_id, anchor.get("quote"), anchor.get("prefix") or "", anchor.get("suffix") or "")
    cached = _states.get(key)
    if isinstance(cached, Found):
        return cached
    found = locate(text, anchor)
    _states.put(key, found)
    return found


def anchor_states(ctx: Context, items: Sequence[Feedback],
                  known: Optional[Mapping[str, Document]] = None) -> dict[str, AnchorState]:
    """feedback_id -> its anchor's state in its document's latest version (anchored items
    of live documents whose latest page can be read).

    A comment written on the latest version is `exact` without a read: its anchor was
    taken from that very text. Others need the latest version's text: at most
    TEXTS_PER_CALL documents' texts are read by one call (cached ones are free), so a
    workspace-wide listing never reads 100 pages; beyond that, items of further
    documents carry no state (null) in this answer. `known`: documents the caller has
    just read (not read again)."""
    out: dict[str, AnchorState] = {}
    documents: dict[str, Optional[Document]] = dict(known or {})
    texts: dict[str, Optional[Text]] = {}
    for item in items:
        if not item.anchor:
            continue
        if item.document_id not in documents:
            documents[item.document_id] = ctx.documents.get(item.document_id)
        doc = documents[item.document_id]
        if doc is None or doc.deleting:
            continue
        if item.version_id == doc.latest_version_id:
            out[item.feedback_id] = AnchorState(version_number=doc.version_count, status="exact", quote_now=None)
            continue
        if doc.document_id not in texts:
            reads = sum(1 for t in texts.values() if t is not None)
            texts[doc.document_id] = (version_text(ctx, doc, doc.latest_version_id)
                                      if reads < TEXTS_PER_CALL or _cached(doc) else None)
        text = texts[doc.document_id]
        if text is None:
            continue
        found = state_in(text, doc.latest_version_id, dict(item.anchor))
        out[item.feedback_id] = AnchorState(version_number=doc.version_count, status=found.status,  # type: ignore[arg-type]
                                            quote_now=found.quote_now)
    return out


def _cached(doc: Document) -> bool:
    return isinstance(_texts.get((doc.document_id, doc.latest_version_id)), Text)
