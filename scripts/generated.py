"""Shared by the scripts that write a generated file the repository ships
(docs/openapi.json, the client's mcp_tools.json): write it, or with `--check`
exit 1 when the committed copy differs from what the code generates now."""
from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(path: Path, text: str, argv: list[str], regenerate: str) -> int:
    if "--check" in argv:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            print(f"{path} is out of date: run `{regenerate}`", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0
