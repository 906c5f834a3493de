"""Issue 24: text search ignores case, accents and Unicode normalisation form
on both stores. Finding: `Café` typed in NFD did not find `Café`."""
from __future__ import annotations

import json
import unicodedata

import pytest

from chalicelib.domain.search import fold
from tests.helpers import post_json


@pytest.mark.parametrize("a, b", [("Café", "CAFE"), ("Café", "cafe\u0301"), ("ÉCOLE", "école"),
                                  ("Straße", "STRASSE"), ("ﬁnance", "finance"), ("Ångström", "angstrom")])
def test_fold_makes_these_equal(a, b):
    assert fold(a) == fold(b)


@pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
def test_cafe_in_any_form_finds_the_same_documents(client, workspace, storage):
    _, key = workspace
    for title in ("Café menu", "Other"):
        assert post_json(client, "/api/v1/publish", {"title": title, "html": "<p>x</p>"}, key).status_code == 200
    nfd = unicodedata.normalize("NFD", "Café")
    for query in ("Café", "CAFE", "cafe\u0301", nfd, "café MENU"):
        r = client.http.get(f"/api/v1/documents?query={query}", headers={"X-Api-Key": key})
        assert r.status_code == 200, r.body
        titles = [d["title"] for d in json.loads(r.body)["documents"]]
        assert titles == ["Café menu"], (query, titles)
