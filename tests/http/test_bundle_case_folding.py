"""Issue 33 finding 8: bundle paths `A.txt` and `a.txt` were accepted together, and the
downloaded zip could not be extracted on macOS or Windows. Contract 4 "Bounds, second
pass": paths equal under Unicode case folding in one version are 422 `validation_error`
naming both (also NFC/NFKC-equivalent spellings, and a file whose name is a folder's)."""
from __future__ import annotations

import json

import pytest

from chalicelib.domain import bundles
from chalicelib.errors import ValidationFailed
from tests.http.test_content_bundles import error, make_zip, publish, upload

PAIRS = [
    ("A.txt", "a.txt"),
    ("Img/Chart.PNG", "img/chart.png"),
    ("stra\u00dfe.txt", "STRASSE.txt"),            # ß folds to ss
    ("caf\u00e9.css", "CAFE\u0301.css"),           # precomposed vs combining accent, and case
    ("\ufb01le.txt", "file.txt"),                  # the ﬁ ligature (NFKC)
    ("\uff21.txt", "a.txt"),                       # fullwidth Ａ (NFKC), and case
    ("\u212bngstrom.txt", "\u00e5ngstrom.txt"),    # Kelvin-style Ångström sign vs å
    ("docs", "DOCS/readme.txt"),                   # a file where another path needs a folder
]


@pytest.mark.parametrize("first, second", PAIRS)
def test_the_domain_rule_names_both(first, second):
    class Entry:
        def __init__(self, path):
            self.path, self.content, self.encoding = path, "x", "utf-8"

    with pytest.raises(ValidationFailed) as raised:
        bundles.from_json([Entry("ok.css"), Entry(first), Entry(second)])
    error = raised.value
    assert first in error.message and second in error.message, error.message
    assert [f["field"] for f in error.details["fields"]] == ["files.1.path", "files.2.path"]
    assert error.details["paths"] == [first, second]


def test_distinct_paths_still_pass():
    class Entry:
        def __init__(self, path):
            self.path, self.content, self.encoding = path, "x", "utf-8"

    names = ["a.txt", "b.txt", "a/b.txt", "a.txt.bak", "caf\u00e9.css", "cafe.css", "img/a.png", "imgs/a.png"]
    assert [f.path for f in bundles.from_json([Entry(n) for n in names])] == names


def test_publish_with_json_files_is_422_naming_both(client, workspace):
    _, key = workspace
    err = error(publish(client, key, files=[{"path": "A.txt", "content": "x"}, {"path": "a.txt", "content": "y"}]),
                422)
    assert err["code"] == "validation_error"
    assert "'A.txt'" in err["message"] and "'a.txt'" in err["message"]
    assert {f["field"] for f in err["details"]["fields"]} == {"files.0.path", "files.1.path"}


def test_a_zip_upload_is_422_naming_both_and_stores_nothing(client, workspace, ctx):
    workspace_id, key = workspace
    data = make_zip({"index.html": "<title>x</title>", "Notes/Read.me": "1", "notes/read.ME": "2"})
    err = error(upload(client, key, "site.zip", data), 422)
    assert "'Notes/Read.me'" in err["message"] and "'notes/read.ME'" in err["message"], err
    assert err["details"]["fields"][0]["field"] == "file"
    listed = json.loads(client.http.get("/api/v1/documents", headers={"X-Api-Key": key}).body)
    assert listed["documents"] == []


def test_a_file_named_like_the_page_in_another_case_is_refused(client, workspace):
    _, key = workspace
    err = error(publish(client, key, files=[{"path": "INDEX.HTML", "content": "x"}]), 422)
    assert "page's own name" in err["message"]
