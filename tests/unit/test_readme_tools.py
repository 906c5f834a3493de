"""The README's MCP section names every tool the server lists (it named 11 of 13)."""
from __future__ import annotations

import re
from pathlib import Path


def test_readme_names_every_mcp_tool():
    from chalicelib.entrypoints.mcp_tools import TOOLS

    text = Path(__file__).resolve().parents[2].joinpath("README.md").read_text(encoding="utf-8")
    section = text[text.index("## Use Docpub from an AI agent (MCP)"):]
    listed = re.search(r"Its tools \(([^)]*)\)", section).group(1)
    named = {name.strip() for name in listed.replace("\n", " ").split(",")}
    assert named == set(TOOLS)
