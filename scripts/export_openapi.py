"""`make openapi`: write the generated OpenAPI document to docs/openapi.json.

`--check` exits 1 (printing nothing else) when the committed copy is stale.
"""
from __future__ import annotations

import sys
from pathlib import Path

PATH = Path(__file__).resolve().parent.parent / "docs" / "openapi.json"


def render() -> str:
    from app import app
    from chalicelib import openapi

    return openapi.dumps(openapi.build(app.routes))


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not PATH.exists() or PATH.read_text(encoding="utf-8") != text:
            print(f"{PATH} is out of date: run `make openapi`", file=sys.stderr)
            return 1
        return 0
    PATH.write_text(text, encoding="utf-8")
    print(f"wrote {PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
