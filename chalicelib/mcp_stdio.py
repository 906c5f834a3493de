"""Docpub's MCP tools over stdio, for clients that only launch local servers.

    DOCPUB_URL=https://docpub.example.com DOCPUB_API_KEY=dpk_… python -m chalicelib.mcp_stdio

A proxy: it serves MCP on stdin/stdout and forwards `tools/list` and
`tools/call` to `{DOCPUB_URL}/mcp` (Streamable HTTP) with the API key, so the
tools, their schemas, limits and errors are exactly the deployed service's.
`DOCPUB_URL` is the service's base URL (a URL already ending in `/mcp` is
accepted too). Nothing is sent until the client asks for something. Logs go to
stderr (stdout is the protocol); the API key is never logged.
"""
from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, AsyncIterator, Optional

USAGE = ("usage: DOCPUB_URL=https://your-docpub DOCPUB_API_KEY=dpk_... python -m chalicelib.mcp_stdio\n"
         "Serves Docpub's MCP tools on stdin/stdout, forwarding to {DOCPUB_URL}/mcp.")


def endpoint_from(url: str) -> str:
    url = url.strip().rstrip("/")
    return url if url.endswith("/mcp") else url + "/mcp"


class Remote:
    """The HTTP endpoint, as one MCP client kept for the life of the stdio session."""

    def __init__(self, endpoint: str, api_key: str):
        self.endpoint = endpoint
        self.api_key = api_key
        self.client: Any = None
        self.last_http_error: Optional[str] = None

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator["Remote"]:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        async def remember_errors(response):
            # The service answers 401/403/5xx in its own JSON shape (not JSON-RPC);
            # keep the code and message so the stdio client sees why a call failed.
            if response.status_code >= 400:
                await response.aread()
                try:
                    error = response.json()["error"]
                    self.last_http_error = f"{error['code']}: {error['message']}"
                except Exception:  # noqa: BLE001 - any other body: the status says enough
                    self.last_http_error = f"HTTP {response.status_code} from {self.endpoint}"

        async with httpx2.AsyncClient(
                headers={"X-Api-Key": self.api_key, "User-Agent": "docpub-mcp-stdio/1"},
                timeout=httpx2.Timeout(30.0, read=300.0),
                event_hooks={"response": [remember_errors]}) as http:
            transport = streamable_http_client(self.endpoint, http_client=http, terminate_on_close=False)
            # The service is stateless: pinning the protocol version means no handshake,
            # so nothing is sent until the stdio client asks for something.
            async with Client(transport, mode="2026-07-28", cache=None) as client:
                self.client = client
                yield self

    def explain(self, exc: BaseException) -> str:
        reason = self.last_http_error or f"{type(exc).__name__}: {exc}"
        self.last_http_error = None
        return f"{reason} (while calling {self.endpoint}; check DOCPUB_URL and DOCPUB_API_KEY)"


def build_proxy(remote: Remote):
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError
    from mcp_types import INTERNAL_ERROR, CallToolResult, ListToolsResult, TextContent

    @contextlib.asynccontextmanager
    async def lifespan(_server) -> AsyncIterator[dict]:
        async with remote.connect():
            yield {}

    async def list_tools(_ctx, params) -> ListToolsResult:
        try:
            return await remote.client.list_tools(cursor=params.cursor if params else None)
        except Exception as exc:  # noqa: BLE001 - surfaced to the client as a JSON-RPC error
            raise MCPError(INTERNAL_ERROR, remote.explain(exc)) from exc

    async def call_tool(_ctx, params) -> CallToolResult:
        try:
            return await remote.client.call_tool(params.name, params.arguments or {})
        except Exception as exc:  # noqa: BLE001 - a failed forward is a failed tool call
            return CallToolResult(is_error=True, content=[TextContent(type="text", text=remote.explain(exc))])

    from chalicelib.mcp_instructions import instructions

    return Server("docpub", title="Docpub", version="1", instructions=instructions(), lifespan=lifespan,
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(endpoint: str, api_key: str) -> None:
    from mcp.server.stdio import stdio_server

    server = build_proxy(Remote(endpoint, api_key))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    url = os.environ.get("DOCPUB_URL", "").strip()
    api_key = os.environ.get("DOCPUB_API_KEY", "").strip()
    if not url or not api_key:
        print("docpub mcp_stdio: set DOCPUB_URL and DOCPUB_API_KEY.\n" + USAGE, file=sys.stderr)
        return 2
    import logging

    import anyio

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="docpub-mcp %(levelname)s %(message)s")
    anyio.run(serve, endpoint_from(url), api_key)
    return 0


if __name__ == "__main__":
    sys.exit(main())
