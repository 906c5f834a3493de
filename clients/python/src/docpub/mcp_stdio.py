"""`docpub mcp` (also `docpub-mcp`): Docpub's MCP tools over stdio, for clients that launch a command.

    DOCPUB_URL=https://docpub.example.com DOCPUB_API_KEY=dpk_… docpub-mcp

Serves MCP on stdin/stdout with the official SDK (`pip install 'docpub[mcp]'`).
`tools/list` is answered from the tool list shipped in this package
(docpub/mcp_tools.json, generated from the service's tools), so the server
starts and lists its tools even when the service is down or unreachable.
Each `tools/call` is forwarded to `{DOCPUB_URL}/mcp` (Streamable HTTP, stateless)
with the API key; when the service cannot be reached the call answers at once
(within a few seconds) with `isError: true` and text
`connection_error: cannot reach <url> …`. URL and key come from --url/--api-key,
DOCPUB_URL/DOCPUB_API_KEY, or the `docpub login` config file. Nothing goes to
stdout but the protocol; notes go to stderr, never the key.
"""
from __future__ import annotations

import json
import sys
from importlib import resources
from typing import Any, Optional

import httpx

from docpub import config
from docpub.client import VERSION

PROTOCOL_VERSION = "2025-11-25"  # what each forwarded request says it speaks (the service is stateless)
CONNECT_TIMEOUT = 3.0  # seconds: an unreachable service is reported well within 5 s
READ_TIMEOUT = 300.0   # a 4 MiB publish on a slow link still completes
SDK_MISSING = ("docpub mcp needs the MCP SDK, which this install lacks: "
               "pip install 'docpub[mcp]' (from a checkout: pip install './clients/python[mcp]')")


def load_tool_list() -> dict[str, Any]:
    """{"instructions": str, "tools": [Tool as JSON]} shipped in the package."""
    return json.loads(resources.files("docpub").joinpath("mcp_tools.json").read_text(encoding="utf-8"))


def endpoint_from(url: str) -> str:
    url = url.strip().rstrip("/")
    return url if url.endswith("/mcp") else url + "/mcp"


def _error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


class Forwarder:
    """Forwards one tool call at a time to the service's /mcp; never raises."""

    def __init__(self, endpoint: str, api_key: Optional[str], read_timeout: float = READ_TIMEOUT):
        self.endpoint = endpoint
        self.api_key = api_key
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(read_timeout, connect=CONNECT_TIMEOUT,
                                                            pool=CONNECT_TIMEOUT))
        self._next_id = 0

    async def aclose(self) -> None:
        await self.http.aclose()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tool's result as MCP JSON (a CallToolResult), or an `isError` result saying why not."""
        if not self.api_key:
            return _error("unauthorized: no API key: set DOCPUB_API_KEY in the MCP client's configuration "
                          "(or run `docpub login`)")
        self._next_id += 1
        body = {"jsonrpc": "2.0", "id": self._next_id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}
        headers = {"X-Api-Key": self.api_key, "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROTOCOL_VERSION,
                   "User-Agent": f"docpub-mcp/{VERSION}"}
        try:
            response = await self.http.post(self.endpoint, content=json.dumps(body, ensure_ascii=False).encode(),
                                            headers=headers)
        except httpx.TimeoutException as exc:
            what = "did not accept a connection" if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)) \
                else "did not answer in time"
            return _error(f"connection_error: cannot reach {self.endpoint}: it {what}; check that the service "
                          "is running and DOCPUB_URL is right, then retry")
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            return _error(f"connection_error: cannot reach {self.endpoint} ({reason}); check that the service "
                          "is running (`make run` locally) and DOCPUB_URL is right, then retry")
        return self._result(response)

    def _result(self, response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code >= 400 or not isinstance(data, dict):
            error = data.get("error") if isinstance(data, dict) else None
            if isinstance(error, dict) and "code" in error:
                text = f"{error['code']}: {error.get('message', '')}"
                if error["code"] in ("unauthorized", "invalid_api_key"):
                    text += " (check DOCPUB_API_KEY in the MCP client's configuration)"
                return _error(text)
            return _error(f"service_error: {self.endpoint} answered HTTP {response.status_code}, not MCP; "
                          "check DOCPUB_URL")
        if isinstance(data.get("error"), dict):  # a JSON-RPC error
            return _error(f"mcp_error: {data['error'].get('message', 'the service refused the call')}")
        result = data.get("result")
        if not isinstance(result, dict):
            return _error(f"service_error: {self.endpoint} answered without a result")
        return result


def build_server(forwarder: Forwarder, tool_list: dict[str, Any]):
    from mcp.server.lowlevel import Server
    from mcp_types import CallToolResult, ListToolsResult, Tool

    tools = [Tool.model_validate(t) for t in tool_list["tools"]]

    async def list_tools(_ctx, _params) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(_ctx, params) -> CallToolResult:
        result = await forwarder.call_tool(params.name, params.arguments or {})
        try:
            return CallToolResult.model_validate(result)
        except Exception:  # noqa: BLE001 - a result this client cannot read is still an answer
            return CallToolResult.model_validate(_error(f"service_error: unreadable result from {forwarder.endpoint}"))

    return Server("docpub", title="Docpub", version=VERSION, instructions=tool_list.get("instructions"),
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(endpoint: str, api_key: Optional[str]) -> None:
    from mcp.server.stdio import stdio_server

    forwarder = Forwarder(endpoint, api_key)
    try:
        server = build_server(forwarder, load_tool_list())
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await forwarder.aclose()


def run(url: Optional[str] = None, api_key: Optional[str] = None) -> int:
    """Serve until stdin closes. Returns the exit status."""
    try:
        import anyio
        import mcp.server.lowlevel  # noqa: F401
    except ImportError:
        print(f"docpub: error: {SDK_MISSING}", file=sys.stderr)
        return 2
    import logging

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="docpub-mcp %(levelname)s %(message)s")
    settings = config.resolve(url, api_key)
    endpoint = endpoint_from(settings.url)
    if not settings.api_key:
        print("docpub-mcp: no API key (DOCPUB_API_KEY): tools are listed, calls will say so", file=sys.stderr)
    try:
        anyio.run(serve, endpoint, settings.api_key)
    except KeyboardInterrupt:
        return 130
    return 0


def main(argv: Optional[list[str]] = None) -> None:
    """The `docpub-mcp` console script: [--url URL] [--api-key KEY]."""
    import argparse

    parser = argparse.ArgumentParser(prog="docpub-mcp", description=(
        "Docpub's MCP tools over stdio (for MCP clients that launch a command). Forwards each tool call "
        "to {DOCPUB_URL}/mcp with DOCPUB_API_KEY; lists the tools even when the service is down."))
    parser.add_argument("--url", help="service address (else DOCPUB_URL, else the `docpub login` config)")
    parser.add_argument("--api-key", help="API key (else DOCPUB_API_KEY, else the `docpub login` config)")
    args = parser.parse_args(argv)
    sys.exit(run(args.url, args.api_key))


if __name__ == "__main__":
    main()
