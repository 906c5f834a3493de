"""Defects of the real local stack (`make run`) found by driving it over raw HTTP
(helper s3-qa), each reproduced here before its fix."""
from __future__ import annotations

import json
import socket

import pytest

pytestmark = pytest.mark.e2e


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


@pytest.mark.parametrize("method", [b"POST", b"PATCH", b"TRACE"])
def test_a_content_length_that_is_not_a_number_is_400_not_a_dropped_connection(stack, method):
    """Reproduction: `Content-Length: abc` on POST /api/v1/publish got no answer at all
    (chalice local's int() raised, the connection closed empty, a traceback logged).
    A header the server cannot read is 400 `invalid_request` (contract section 4)."""
    data = _raw(stack.port, method + b" /api/v1/publish HTTP/1.1\r\nHost: local\r\nContent-Type: application/json\r\n"
                b"Content-Length: abc\r\nConnection: close\r\n\r\n{}")
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), data[:300]
    assert json.loads(body)["error"]["code"] == "invalid_request"
