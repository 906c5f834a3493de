"""Every `docpub` command against the real local stack, human and --json output."""
from __future__ import annotations

import json
import re
import stat
import uuid

import pytest

pytestmark = pytest.mark.e2e

PAGE = "<html><head><title>Nightly &amp; report</title></head><body><p>alpha beta beta</p></body></html>"


def publish_json(cli, tmp_path, html: str = PAGE, *args: str) -> dict:
    path = tmp_path / f"{uuid.uuid4().hex[:8]}.html"
    path.write_text(html, encoding="utf-8")
    return cli.json("publish", str(path), *args)


def test_publish_prints_only_the_share_url(cli, api, stack, tmp_path):
    report = tmp_path / "report.html"
    report.write_text(PAGE, encoding="utf-8")
    result = cli.ok("publish", str(report))
    url = result.stdout.strip()
    assert result.stdout == url + "\n"
    assert re.fullmatch(re.escape(stack.base_url) + r"/d/[A-Za-z0-9_-]{22,}", url)
    assert result.stderr == ""
    docs = api.get("/api/v1/documents").json()["documents"]
    doc = next(d for d in docs if d["share_url"] == url)
    assert doc["title"] == "Nightly & report"  # from <title>, entities decoded


def test_publish_title_falls_back_to_file_name_then_flag(cli, api, tmp_path):
    bare = tmp_path / "summary-2026.html"
    bare.write_text("<p>no title here</p>", encoding="utf-8")
    first = cli.json("publish", str(bare))
    assert api.get(f"/api/v1/documents/{first['document_id']}").json()["title"] == "summary-2026.html"
    second = cli.json("publish", "-", "--title", "From stdin", "--description", "piped",
                      input="<p>stdin é</p>")
    got = api.get(f"/api/v1/documents/{second['document_id']}", params={"include_html": "true"}).json()
    assert (got["title"], got["description"], got["html"]) == ("From stdin", "piped", "<p>stdin é</p>")


def test_publish_json_and_append_version_with_note(cli, api, tmp_path):
    first = publish_json(cli, tmp_path)
    assert set(first) == {"document_id", "version_id", "version_number", "share_url"}
    assert first["version_number"] == 1
    second = publish_json(cli, tmp_path, PAGE.replace("alpha", "gamma"), "--document", first["document_id"],
                          "--note", "run 2", "--title", "Nightly")
    assert second["document_id"] == first["document_id"]
    assert second["version_number"] == 2
    assert second["share_url"] == first["share_url"]
    doc = api.get(f"/api/v1/documents/{first['document_id']}").json()
    assert doc["title"] == "Nightly"
    assert [(v["number"], v.get("note")) for v in doc["versions"]] == [(1, None), (2, "run 2")]


def test_edit_replace_replace_all_and_from_json(cli, api, tmp_path):
    doc = publish_json(cli, tmp_path)
    doc_id = doc["document_id"]
    result = cli.ok("edit", doc_id, "--replace", "alpha", "ALPHA", "--replace", "</p>", "</p><p>added</p>",
                    "--note", "two edits")
    assert result.stdout.strip() == doc["share_url"]
    assert "version 2: 2 edit(s), 2 replacement(s)" in result.stderr
    out = cli.json("edit", doc_id, "--replace", "beta", "BETA", "--replace-all")
    assert out["version_number"] == 3
    assert out["summary"]["replacements"] == 2
    edits = tmp_path / "edits.json"
    edits.write_text(json.dumps({"edits": [{"old_string": "ALPHA", "new_string": "Alpha"}], "note": "from file"}))
    out = cli.json("edit", doc_id, "--from-json", str(edits))
    assert out["version_number"] == 4
    out = cli.json("edit", doc_id, "--from-json", "-", input=json.dumps([{"old_string": "added", "new_string": "more"}]))
    assert out["version_number"] == 5
    html = api.get(f"/api/v1/documents/{doc_id}", params={"include_html": "true"}).json()["html"]
    assert "<p>Alpha BETA BETA</p><p>more</p>" in html
    notes = [v.get("note") for v in api.get(f"/api/v1/documents/{doc_id}").json()["versions"]]
    assert notes == [None, "two edits", None, "from file", None]


def test_edit_errors_carry_the_contract_code(cli, tmp_path):
    doc_id = publish_json(cli, tmp_path)["document_id"]
    missing = cli("edit", doc_id, "--replace", "zeta", "eta")
    assert missing.returncode == 2
    assert missing.stderr.startswith("docpub: error: edit_not_found: ")
    assert missing.stderr.count("\n") == 1  # one line
    ambiguous = cli("edit", doc_id, "--replace", "beta", "x", "--json")
    assert ambiguous.returncode == 2
    body = json.loads(ambiguous.stdout)
    assert body["error"]["code"] == "edit_ambiguous"
    assert body["error"]["details"]["match_count"] == 2
    nothing = cli("edit", doc_id)
    assert nothing.returncode == 2 and "--replace" in nothing.stderr


def test_a_secret_is_refused_with_its_places_and_allow_secrets_publishes(cli, tmp_path):
    """Issue 36: the 422 secret_detected's findings, one line each, and --allow-secrets."""
    key = "AKIA" + "QZ7R2MXK4WTB6PLV"  # an AWS access key id's shape (not a real key)
    report = tmp_path / "report.md"
    report.write_text(f"# Run\n\nused {key} today\n")
    refused = cli("publish", str(report))
    assert refused.returncode == 2
    lines = refused.stderr.splitlines()
    assert lines[0].startswith("docpub: error: secret_detected: The content holds an AWS access key on line 3")
    assert lines[1] == f"  content:3:6  aws-access-token  {key[:4]}…{key[-4:]}"
    assert key not in refused.stderr
    allowed = cli("publish", str(report), "--allow-secrets")
    assert allowed.returncode == 0 and allowed.stdout.strip().startswith("http")


def test_get_shows_versions_and_prints_html_of_any_version(cli, tmp_path):
    first = publish_json(cli, tmp_path, "<p>v1 ü</p>", "--title", "Versions")
    publish_json(cli, tmp_path, "<p>v2</p>", "--document", first["document_id"], "--note", "second")
    doc_id = first["document_id"]
    assert cli.ok("get", doc_id, "--html", "--version", "1").stdout == "<p>v1 ü</p>"
    assert cli.ok("get", doc_id, "--html").stdout == "<p>v2</p>"
    human = cli.ok("get", doc_id).stdout
    assert "Versions" in human and doc_id in human and first["share_url"] in human
    assert re.search(r"^2\t.*\tsecond$", human, re.M)
    data = cli.json("get", doc_id)
    assert [v["number"] for v in data["versions"]] == [1, 2]
    assert "html" not in data
    data = cli.json("get", doc_id, "--html", "--version", "1")
    assert data["html"] == "<p>v1 ü</p>"
    missing = cli("get", doc_id, "--version", "9")
    assert missing.returncode == 4 and "not_found" in missing.stderr


def test_list_find_and_paging(stack, tmp_path):
    from conftest import Cli

    key = stack.admin("create-workspace", "--name", "Listing", "--plan", "pro")["api_key"]
    cli = Cli(tmp_path, stack.base_url, key)
    assert cli.ok("list").stdout == ""
    token = uuid.uuid4().hex[:10]
    with stack.client(key) as http:  # setup over plain HTTP; publish itself is tested above
        ids = [http.post("/api/v1/publish", json={"title": f"Doc {i}", "html": f"<p>{i}</p>",
                                                  "description": f"has {token}" if i == 1 else ""}
                         ).json()["document_id"] for i in range(3)]
    page = cli.json("list")
    assert [d["document_id"] for d in page["documents"]] == ids[::-1]  # newest first
    assert page["next_cursor"] is None
    lines = cli.ok("list").stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == ids[::-1]
    assert lines[0].split("\t")[1:3] == ["Doc 2", "1"]
    first = cli.json("list", "--limit", "2")
    assert len(first["documents"]) == 2 and first["next_cursor"]
    rest = cli.json("list", "--limit", "2", "--cursor", first["next_cursor"])
    assert [d["document_id"] for d in first["documents"] + rest["documents"]] == ids[::-1]
    everything = cli.json("list", "--all", "--limit", "1")
    assert [d["document_id"] for d in everything["documents"]] == ids[::-1]
    found = cli.json("find", token.upper())
    assert [d["document_id"] for d in found["documents"]] == [ids[1]]
    assert cli.ok("find", "doc 0").stdout.startswith(ids[0] + "\t")
    assert cli.ok("find", "nothing-like-this").stderr.startswith("no documents match")


def test_rename_and_delete(cli, api, tmp_path):
    doc_id = publish_json(cli, tmp_path)["document_id"]
    assert cli.ok("rename", doc_id, "--title", "Renamed").stdout == "Renamed\n"
    out = cli.json("rename", doc_id, "--description", "new words")
    assert (out["title"], out["description"], out["version_count"]) == ("Renamed", "new words", 1)
    assert cli("rename", doc_id).returncode == 2
    refused = cli("delete", doc_id)  # stdin is not a terminal and no --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert api.get(f"/api/v1/documents/{doc_id}").status_code == 200
    assert cli.json("delete", doc_id, "--yes") == {"document_id": doc_id, "deleted": True}
    assert api.get(f"/api/v1/documents/{doc_id}").status_code == 404
    again = cli("delete", doc_id, "--yes")
    assert again.returncode == 4 and "not_found" in again.stderr


def test_open_launches_the_browser_with_the_share_link(cli, tmp_path):
    doc = publish_json(cli, tmp_path)
    seen = tmp_path / "opened.txt"
    browser = tmp_path / "fake-browser"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > "{seen}"\n')
    browser.chmod(0o755)
    result = cli.ok("open", doc["document_id"], env={"BROWSER": f"{browser} %s"})
    assert result.stdout.strip() == doc["share_url"]
    assert seen.read_text() == doc["share_url"]
    out = cli.json("open", doc["document_id"], env={"BROWSER": f"{browser} %s"})
    assert out == {"document_id": doc["document_id"], "share_url": doc["share_url"], "opened": True}


def test_whoami_shows_workspace_and_never_the_key(cli, pro_key):
    human = cli.ok("whoami")
    assert "Plan:       pro" in human.stdout
    assert "Key from:   DOCPUB_API_KEY" in human.stdout
    assert pro_key not in human.stdout + human.stderr
    data = cli.json("whoami")
    assert data["workspace"]["plan"] == "pro"
    assert pro_key not in json.dumps(data)


def test_login_writes_a_private_config_file_that_later_commands_use(stack, pro_key, tmp_path):
    from conftest import Cli

    bare = Cli(tmp_path, None, None)  # no DOCPUB_URL / DOCPUB_API_KEY
    assert bare("whoami", "--url", stack.base_url).returncode == 3
    refused = bare("login", "--url", stack.base_url, input="dpk_" + "x" * 40 + "\n")
    assert refused.returncode == 3 and "invalid_api_key" in refused.stderr
    config = tmp_path / "config" / "docpub" / "config.json"
    assert not config.exists()
    done = bare("login", "--url", stack.base_url, input=pro_key + "\n")
    assert done.returncode == 0, done.stderr
    assert pro_key not in done.stdout + done.stderr
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert json.loads(config.read_text()) == {"url": stack.base_url, "api_key": pro_key}
    who = bare.ok("whoami")
    assert "Key from:   config file" in who.stdout and pro_key not in who.stdout
    # The environment beats the file, a flag beats the environment.
    assert bare("whoami", env={"DOCPUB_API_KEY": "dpk_" + "y" * 40}).returncode == 3
    assert bare("whoami", "--api-key", pro_key, env={"DOCPUB_API_KEY": "dpk_" + "y" * 40}).returncode == 0
    assert bare.json("logout")["removed"] is True
    assert not config.exists()
    assert bare("whoami").returncode == 3


def test_options_work_before_and_after_the_command(cli):
    assert json.loads(cli.ok("--json", "whoami").stdout)["workspace"]["plan"] == "pro"
    assert json.loads(cli.ok("whoami", "--json").stdout)["workspace"]["plan"] == "pro"
