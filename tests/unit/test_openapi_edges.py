"""Issue 33 finding 8: a 65 KB query string got an HTML 414 page from the local server,
outside the OpenAPI document. Every operation lists 414 `uri_too_long` and 431
`headers_too_large` with the contract's error body."""
from __future__ import annotations

import json
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]


def test_every_operation_lists_414_and_431():
    document = json.loads((PROJECT_DIR / "docs" / "openapi.json").read_text())
    operations = [op for methods in document["paths"].values() for op in methods.values()
                  if isinstance(op, dict) and "responses" in op]
    assert operations
    for op in operations:
        for status in ("414", "431"):
            assert status in op["responses"], (op.get("operationId"), status)
            schema = op["responses"][status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}


def test_the_error_classes_carry_the_codes():
    from chalicelib import errors

    assert (errors.UriTooLong.status, errors.UriTooLong.code) == (414, "uri_too_long")
    assert (errors.HeadersTooLarge.status, errors.HeadersTooLarge.code) == (431, "headers_too_large")
