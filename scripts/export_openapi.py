"""`make openapi`: write the generated OpenAPI document to docs/openapi.json.

`--check` exits 1 (printing nothing else) when the committed copy is stale.
"""
from __future__ import annotations

import sys
from pathlib import Path

from scripts.generated import write_or_check

PATH = Path(__file__).resolve().parent.parent / "docs" / "openapi.json"


def render() -> str:
    from app import app
    from chalicelib import openapi

    return openapi.dumps(openapi.build(app.routes))


def main(argv: list[str]) -> int:
    return write_or_check(PATH, render(), argv, "make openapi")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
