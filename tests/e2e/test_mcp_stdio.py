"""The stdio MCP server of the client package (`docpub-mcp` / `docpub mcp`), issue 17.

Installed into a fresh virtualenv and started from an unrelated folder without
PYTHONPATH, driven by the official MCP client over stdio: against a stopped
server (tools listed from the package, every call answered within 5 s with
`connection_error: cannot reach <url>`, no traceback on stderr) and against the
running local stack.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import anyio
import pytest

from tests.stack import free_port

PROJECT_DIR = Path(__file__).resolve().parents[2]
CLIENT_DIR = PROJECT_DIR / "clients" / "python"


def test_the_shipped_tool_list_is_the_services():
    """docpub/mcp_tools.json is what chalicelib's /mcp lists (regenerate: python -m scripts.export_mcp_tools)."""
    from scripts import export_mcp_tools

    shipped = json.loads(export_mcp_tools.PATH.read_text(encoding="utf-8"))
    current = json.loads(export_mcp_tools.render())
    assert [t["name"] for t in shipped["tools"]] == [t["name"] for t in current["tools"]]
    assert shipped == current, "run `.venv/bin/python -m scripts.export_mcp_tools`"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """`pip install ./clients/python` into a fresh virtualenv (its dependencies come from
    this one through a .pth file, so nothing is downloaded but the build backend)."""
    venv = tmp_path_factory.mktemp("client-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "shared-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                          str(CLIENT_DIR)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return venv / "bin"


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DOCPUB_", "PYTHON", "VIRTUAL_ENV")) and not k.lower().endswith("_proxy")}
    env["HOME"] = extra.pop("HOME", env.get("HOME", "/tmp"))
    env.update(extra)
    return env


def stdio(command: list[str], env: dict, cwd: Path):
    from mcp import StdioServerParameters

    return StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(cwd))


def shipped_names() -> list[str]:
    from scripts.export_mcp_tools import PATH

    return [t["name"] for t in json.loads(PATH.read_text(encoding="utf-8"))["tools"]]


ARGS = {"publish_document": {"title": "T", "html": "<p>x</p>"},
        "edit_document": {"document_id": "3f0c5e9a-2b1d-4c8e-9f6a-1b2c3d4e5f60",
                          "edits": [{"old_string": "a", "new_string": "b"}]},
        "get_document": {"document_id": "3f0c5e9a-2b1d-4c8e-9f6a-1b2c3d4e5f60"},
        "update_document": {"document_id": "3f0c5e9a-2b1d-4c8e-9f6a-1b2c3d4e5f60", "title": "T"},
        "delete_document": {"document_id": "3f0c5e9a-2b1d-4c8e-9f6a-1b2c3d4e5f60"},
        "find_document": {"query": "x"},
        "resolve_feedback": {"feedback_id": "fb_x"}}


@pytest.mark.parametrize("entry", ["docpub-mcp", "docpub mcp"])
def test_against_a_stopped_server_it_lists_tools_and_answers_each_call_within_5_s(installed, tmp_path, entry):
    from mcp import Client
    from mcp.client.stdio import stdio_client

    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    command = [str(installed / entry.split()[0]), *entry.split()[1:]]
    errlog = open(tmp_path / "stderr.txt", "w+")
    timings: dict[str, float] = {}

    async def main():
        env = clean_env(DOCPUB_URL=url, DOCPUB_API_KEY="dpk_" + "k" * 43, HOME=str(tmp_path))
        async with Client(stdio_client(stdio(command, env, tmp_path), errlog=errlog)) as client:
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == shipped_names()
            assert all(t.input_schema and t.description for t in tools)
            for tool in tools:
                started = time.monotonic()
                with anyio.fail_after(10):
                    result = await client.call_tool(tool.name, ARGS.get(tool.name, {}))
                timings[tool.name] = time.monotonic() - started
                assert result.is_error is True
                assert result.content[0].text.startswith(f"connection_error: cannot reach {url}/mcp"), \
                    result.content[0].text

    anyio.run(main)
    assert max(timings.values()) < 5, timings
    errlog.seek(0)
    stderr = errlog.read()
    assert "Traceback" not in stderr and "ExceptionGroup" not in stderr, stderr


def test_a_host_that_never_accepts_is_reported_within_5_s(installed, tmp_path):
    """A service whose connections hang (listen backlog full: SYNs are dropped, like an
    unroutable address) is reported by the connect timeout, not after minutes."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port), timeout=2)  # fills the backlog, never accepted
    url = f"http://127.0.0.1:{port}"
    errlog = open(tmp_path / "stderr.txt", "w+")

    async def main():
        env = clean_env(DOCPUB_URL=url, DOCPUB_API_KEY="dpk_" + "k" * 43, HOME=str(tmp_path))
        async with Client(stdio_client(stdio([str(installed / "docpub-mcp")], env, tmp_path), errlog=errlog)) as c:
            started = time.monotonic()
            result = await c.call_tool("get_workspace_info", {})
            assert time.monotonic() - started < 5
            assert result.is_error and result.content[0].text.startswith(f"connection_error: cannot reach {url}/mcp")

    from mcp import Client
    from mcp.client.stdio import stdio_client

    try:
        anyio.run(main)
    finally:
        filler.close()
        listener.close()
    errlog.seek(0)
    assert "Traceback" not in errlog.read()


def test_without_a_key_it_starts_lists_tools_and_says_what_is_missing(installed, tmp_path):
    from mcp import Client
    from mcp.client.stdio import stdio_client

    async def main():
        env = clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
        async with Client(stdio_client(stdio([str(installed / "docpub-mcp")], env, tmp_path))) as client:
            assert [t.name for t in (await client.list_tools()).tools] == shipped_names()
            result = await client.call_tool("get_workspace_info", {})
            assert result.is_error and result.content[0].text.startswith("unauthorized: no API key")

    anyio.run(main)


@pytest.mark.e2e
def test_against_the_running_stack_publish_edit_read(installed, stack, tmp_path):
    from mcp import Client
    from mcp.client.stdio import stdio_client

    # its own workspace: the shared dev workspace's free cap belongs to other e2e tests
    own_key = stack.admin("create-workspace", "--name", "Stdio", "--plan", "free")["api_key"]

    async def main():
        env = clean_env(DOCPUB_URL=stack.base_url, DOCPUB_API_KEY=own_key, HOME=str(tmp_path))
        async with Client(stdio_client(stdio([str(installed / "docpub"), "mcp"], env, tmp_path))) as client:
            published = await client.call_tool("publish_document", {"title": "Stdio", "html": "<p>draft</p>"})
            assert published.is_error is False, published.content[0].text
            doc_id = published.structured_content["document_id"]
            edited = await client.call_tool("edit_document", {
                "document_id": doc_id, "edits": [{"old_string": "draft", "new_string": "final"}]})
            assert edited.structured_content["version_number"] == 2
            got = await client.call_tool("get_document", {"document_id": doc_id, "include_html": True})
            assert got.structured_content["html"] == "<p>final</p>"
            assert got.structured_content["title"] == "Stdio"
            wrong = await client.call_tool("edit_document", {"document_id": doc_id, "edits": []})
            assert wrong.is_error and wrong.content[0].text.startswith("validation_error: edits: give 1 to 100")

    anyio.run(main)
