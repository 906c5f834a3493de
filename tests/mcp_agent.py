"""An agent for end-to-end browser tests: one session of the official MCP client on its
own thread and event loop, running a script while the test drives Chromium; results
(or the script's exception) reach the test through a queue."""
from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any, Awaitable, Callable

Call = Callable[[str, dict], Awaitable[Any]]


class McpAgent(threading.Thread):
    """Subclasses write `script(call)`; `call(tool, arguments)` answers the tool's
    structured content and fails the script on a tool error. Started at once."""

    def __init__(self, stack, key: str):
        super().__init__(daemon=True)
        self.stack, self.key = stack, key
        self.out: queue.Queue = queue.Queue()
        self.start()

    def get(self, timeout: float = 60) -> Any:
        """The script's next result (its exception, raised here, if it failed)."""
        item = self.out.get(timeout=timeout)
        if isinstance(item, BaseException):
            raise item
        return item

    def run(self) -> None:
        try:
            asyncio.run(self._session())
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.out.put(exc)

    async def _session(self) -> None:
        import httpx2
        from mcp.client import Client
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(headers={"X-Api-Key": self.key}, timeout=60) as http:
            async with Client(streamable_http_client(self.stack.base_url + "/mcp", http_client=http),
                              cache=None) as client:
                async def call(name: str, arguments: dict) -> Any:
                    result = await client.call_tool(name, arguments)
                    assert not result.is_error, result.content[0].text
                    return result.structured_content

                await self.script(call)

    async def script(self, call: Call) -> None:
        raise NotImplementedError


def select_text(frame, selector: str, text: str) -> None:
    """Select `text` inside the first text node of `selector` in the document's frame, as
    a reader dragging over it would (the share page offers comment/suggest on it)."""
    frame.locator(selector).wait_for()
    frame.locator(selector).evaluate("""(el, wanted) => {
        const node = el.firstChild, at = node.data.indexOf(wanted), range = document.createRange();
        range.setStart(node, at); range.setEnd(node, at + wanted.length);
        const s = getSelection(); s.removeAllRanges(); s.addRange(range);
    }""", text)
