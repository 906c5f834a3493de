"""`docpub publish FILE --document ID` keeps the title; `--json` errors go to stdout only (issue 17)."""
from __future__ import annotations

import json


def test_a_new_version_keeps_the_title_unless_title_is_given(cli, api, tmp_path):
    first = tmp_path / "report.html"
    first.write_text("<title>Draft report</title><p>v1</p>")
    doc = cli.json("publish", str(first))
    assert api.get(f"/api/v1/documents/{doc['document_id']}").json()["title"] == "Draft report"
    cli.ok("rename", doc["document_id"], "--title", "Final report")

    untitled = tmp_path / "notitle.html"
    untitled.write_text("<p>v2, no title element</p>")
    cli.ok("publish", str(untitled), "--document", doc["document_id"])
    titled = tmp_path / "other.html"
    titled.write_text("<title>Something else</title><p>v3</p>")
    cli.ok("publish", str(titled), "--document", doc["document_id"])
    got = api.get(f"/api/v1/documents/{doc['document_id']}").json()
    assert (got["title"], got["version_count"]) == ("Final report", 3)

    cli.ok("publish", str(titled), "--document", doc["document_id"], "--title", "Renamed on purpose")
    assert api.get(f"/api/v1/documents/{doc['document_id']}").json()["title"] == "Renamed on purpose"


def test_json_errors_go_to_stdout_only(cli, tmp_path):
    page = tmp_path / "page.html"
    page.write_text("<p>x</p>")
    result = cli("publish", str(page), "--document", "3f0c5e9a-2b1d-4c8e-9f6a-1b2c3d4e5f60", "--json")
    assert result.returncode == 4
    assert json.loads(result.stdout)["error"]["code"] == "not_found"
    assert result.stderr == ""
    plain = cli("publish", str(page), "--title", " ")
    assert plain.stdout == "" and plain.stderr.strip() == "docpub: error: validation_error: title: must not be blank"
