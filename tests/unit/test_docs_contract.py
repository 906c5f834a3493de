"""docs/contract.md stays in step with the code, and the docs link it (issue 17)."""
from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]
CONTRACT = (PROJECT_DIR / "docs" / "contract.md").read_text(encoding="utf-8")


def test_every_rest_route_is_in_the_contract():
    from app import app
    from chalicelib import openapi

    for method, path in openapi.rest_routes(app.routes):
        assert f"`{method} {path}`" in CONTRACT, f"docs/contract.md does not mention {method} {path}"


def test_every_error_code_is_in_the_contract():
    from chalicelib import errors

    codes = {cls.code for _, cls in inspect.getmembers(errors, inspect.isclass)
             if issubclass(cls, errors.DocpubError) and cls is not errors.DocpubError}
    assert len(codes) >= 15
    for code in codes:
        assert f"`{code}`" in CONTRACT, f"docs/contract.md does not mention the error code {code}"


def test_every_mcp_tool_is_in_the_contract():
    from scripts.export_mcp_tools import PATH

    for tool in json.loads(PATH.read_text(encoding="utf-8"))["tools"]:
        assert f"`{tool['name']}`" in CONTRACT, f"docs/contract.md does not mention the tool {tool['name']}"


def test_the_docs_link_the_contract_in_the_repository_not_a_missing_file():
    texts = {path: path.read_text(encoding="utf-8") for path in
             [PROJECT_DIR / "README.md", *(PROJECT_DIR / "docs").glob("*.md"),
              *(PROJECT_DIR / "chalicelib").rglob("*.py"), *(PROJECT_DIR / "clients" / "python" / "src").rglob("*.py")]}
    for path, text in texts.items():
        assert "API-CONTRACT.md" not in text, f"{path} cites API-CONTRACT.md, which is not in the repository"
    assert "docs/contract.md" in texts[PROJECT_DIR / "README.md"]
    for path, text in texts.items():  # every relative markdown link points at a file that exists
        if path.suffix == ".md":
            for target in re.findall(r"\]\(([\w./-]+\.(?:md|json|png|yaml|py))(?:#[^)]*)?\)", text):
                assert (path.parent / target).exists(), f"{path.name} links {target}, which does not exist"
