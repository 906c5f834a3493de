"""`python -m chalicelib.mcp_stdio`: kept for existing configurations; the stdio MCP server now
lives in the client package (`docpub mcp` / `docpub-mcp`, clients/python/src/docpub/mcp_stdio.py),
which works from any folder, lists the tools offline and reports an unreachable service at once.

This module only delegates to it (the checkout's client source, so the two always match).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

CLIENT_SRC = Path(__file__).resolve().parent.parent / "clients" / "python" / "src"


def main(argv: Optional[list[str]] = None) -> None:
    if CLIENT_SRC.is_dir():  # a checkout: its own client, whatever version the virtualenv holds
        sys.path.insert(0, str(CLIENT_SRC))
    from docpub import mcp_stdio

    mcp_stdio.main(argv)


if __name__ == "__main__":
    main()
