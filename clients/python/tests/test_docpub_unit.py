"""Pure client behaviour: no server needed."""
from __future__ import annotations

import ast
import os
import stat
import sys
import tomllib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "docpub"
PYPROJECT = SRC.parent.parent / "pyproject.toml"


def test_the_client_never_imports_the_server():
    allowed = {"docpub", "httpx", "click", "rich"}
    # the stdio MCP server (the optional `docpub[mcp]` extra) also uses the MCP SDK
    # `docpub verify` checks signatures and canonical JSON (verify.py only)
    extra = {"mcp_stdio.py": {"mcp", "mcp_types", "anyio"}, "verify.py": {"cryptography", "rfc8785"}}
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    for path in SRC.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                top = name.split(".")[0]
                assert top in allowed | extra.get(path.name, set()) or top in stdlib, f"{path.name} imports {name}"


def test_dependencies_are_pinned_and_minimal():
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    assert project["name"] == "docpub"
    pins = dict(dep.split("==") for dep in project["dependencies"])
    assert set(pins) == {"httpx", "click", "rich", "cryptography", "rfc8785"}  # the last two: `docpub verify`
    assert project["scripts"] == {"docpub": "docpub.cli:main", "docpub-mcp": "docpub.mcp_stdio:main"}
    assert project["optional-dependencies"] == {"mcp": ["mcp==2.3.0"]}


@pytest.mark.parametrize("html, title", [
    ("<html><head><title>Q3 &amp; Q4\n  report</title></head>", "Q3 & Q4 report"),
    ("<TITLE lang='en'>Upper</TITLE>", "Upper"),
    ("<title></title><h1>x</h1>", None),
    ("<h1>No title</h1>", None),
    ("<title>" + "t" * 600 + "</title>", "t" * 500),
])
def test_title_from_html(html, title):
    from docpub.cli import extract_title

    assert extract_title(html) == title


def test_size_check_counts_utf8_bytes():
    from docpub import MAX_HTML_BYTES, LimitError, check_html_size

    assert MAX_HTML_BYTES == 4_194_304
    check_html_size(("é" * 2_097_152).encode())  # exactly 4 MiB of UTF-8
    with pytest.raises(LimitError) as err:
        check_html_size(("é" * 2_097_152 + "x").encode())
    assert err.value.code == "document_too_large" and err.value.exit_code == 5
    assert err.value.details == {"limit_bytes": 4_194_304, "size_bytes": 4_194_305}


def test_error_classes_map_to_exit_statuses():
    from docpub.errors import error_from_response

    def status_of(code: int, error_code: str | None) -> int:
        body = {"error": {"code": error_code, "message": "m"}} if error_code else "<html>bad gateway</html>"
        return error_from_response(code, body).exit_code

    assert status_of(422, "edit_ambiguous") == 2
    assert status_of(400, "invalid_json") == 2
    assert status_of(409, "version_conflict") == 2
    assert status_of(401, "unauthorized") == 3
    assert status_of(401, "invalid_api_key") == 3
    assert status_of(404, "not_found") == 4
    assert status_of(403, "plan_limit_reached") == 5
    assert status_of(403, "feature_not_in_plan") == 5
    assert status_of(413, "document_too_large") == 5
    assert status_of(429, "rate_limited") == 5
    assert status_of(500, "internal_error") == 6
    assert status_of(502, None) == 6


def test_config_file_is_private_and_precedence_is_flag_env_file(tmp_path, monkeypatch):
    from docpub import config

    monkeypatch.setenv("DOCPUB_CONFIG", str(tmp_path / "dir" / "config.json"))
    monkeypatch.delenv("DOCPUB_URL", raising=False)
    monkeypatch.delenv("DOCPUB_API_KEY", raising=False)
    path = config.write_config("http://file", "dpk_file")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    os.chmod(path, 0o644)
    config.write_config("http://file", "dpk_file")  # rewriting tightens the mode again
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert (config.resolve().url, config.resolve().api_key) == ("http://file", "dpk_file")
    monkeypatch.setenv("DOCPUB_URL", "http://env/")
    monkeypatch.setenv("DOCPUB_API_KEY", "dpk_env")
    assert (config.resolve().url, config.resolve().api_key) == ("http://env", "dpk_env")
    assert (config.resolve("http://flag", "dpk_flag").url, config.resolve("http://flag", "dpk_flag").api_key) == (
        "http://flag", "dpk_flag")


def test_repr_never_shows_the_key():
    from docpub import Client

    client = Client("http://127.0.0.1:9", "dpk_secret_secret_secret_secret_secret")
    assert "dpk_secret" not in repr(client)
    client.close()


def test_download_follows_a_redirect_to_storage_without_the_api_key():
    """Deployed, a download too large for a Lambda response is a 302 to a presigned S3 URL."""
    import httpx

    from docpub.client import Client

    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.host == "api.test":
            return httpx.Response(302, headers={"Location": "https://bucket.s3.test/downloads/x.zip?X-Amz-Signature=s"})
        return httpx.Response(200, content=b"PK\x03\x04zip",
                              headers={"Content-Type": "application/zip",
                                       "Content-Disposition": 'attachment; filename="big-site.zip"'})

    with Client("https://api.test", "dp_live_key", transport=httpx.MockTransport(handler)) as client:
        assert client.download("doc") == ("big-site.zip", b"PK\x03\x04zip")
    assert [r.url.host for r in seen] == ["api.test", "bucket.s3.test"]
    assert "X-Api-Key" in seen[0].headers and "X-Api-Key" not in seen[1].headers
