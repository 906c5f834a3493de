"""Write the MCP tool list the client package ships (clients/python/src/docpub/mcp_tools.json).

`docpub mcp` (the stdio server) answers `tools/list` from that file, so it works
offline; a test fails when it differs from the service's tools (chalicelib).
Run `.venv/bin/python -m scripts.export_mcp_tools` after changing a tool;
`--check` exits 1 when the shipped copy is stale.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from scripts.generated import write_or_check

PATH = Path(__file__).resolve().parent.parent / "clients" / "python" / "src" / "docpub" / "mcp_tools.json"


def render() -> str:
    import anyio

    from chalicelib.entrypoints.mcp_tools import build_server
    from chalicelib.mcp_instructions import instructions

    tools = anyio.run(build_server().list_tools)
    data = {"instructions": instructions(),
            "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]}
    return json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    return write_or_check(PATH, render(), argv, ".venv/bin/python -m scripts.export_mcp_tools")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
