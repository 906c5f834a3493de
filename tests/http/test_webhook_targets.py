"""Issue 33 finding 8: numeric or `localhost` webhook hosts were accepted at creation and
then retried for 24 hours though every delivery was refused. Contract 4 "Bounds, second
pass": targets are resolved at creation as at delivery (the one outbound address check,
domain/addresses.py); a non-public host is 422 at creation; a delivery refused for its
target is `failed` at once, not retried, with `last_error` saying why, and the log says
why too (never the URL: its path is often the secret)."""
from __future__ import annotations

import json
import logging
import socket

import pytest

from chalicelib.domain import addresses
from tests.http.test_webhooks import _create, _deliveries, _worker, now_clock, private_ok, receiver  # noqa: F401
from tests.sharing_helpers import publish, send_feedback

NON_PUBLIC_HOSTS = [
    "2130706433", "0x7f000001", "0x7F.1", "127.1", "127.0.1", "0177.0.0.1", "017700000001", "0",
    "localhost", "LOCALHOST", "localhost.", "api.localhost", "[::1]", "[0:0:0:0:0:0:0:1]",
    "[::ffff:7f00:1]", "[::ffff:10.0.0.1]", "[fe80::1]", "167772161",  # 10.0.0.1
    "0xa9fea9fe",  # 169.254.169.254, the cloud metadata address
]


@pytest.mark.parametrize("host", NON_PUBLIC_HOSTS)
def test_the_one_check_sees_through_numeric_forms_and_loopback_names(host):
    assert addresses.host_refusal(host.strip("[]")) is not None


@pytest.mark.parametrize("host", ["hooks.example.com", "93.184.216.34", "1.1.1.1", "2606:4700::1111",
                                  "0x7f.example.com", "127.1.example.com"])
def test_public_literals_and_names_pass_the_literal_check(host):
    assert addresses.host_refusal(host) is None


@pytest.mark.parametrize("host", NON_PUBLIC_HOSTS)
def test_a_non_public_host_is_422_at_creation(client, workspace, host):
    _, key = workspace
    status, body = _create(client, key, f"https://{host}/hook")
    assert status == 422, body
    assert body["error"]["code"] == "validation_error"
    assert body["error"]["details"]["fields"][0]["field"] == "url"
    assert "public" in body["error"]["message"]


def test_a_name_that_resolves_to_a_private_address_is_422_at_creation(client, workspace, monkeypatch):
    _, key = workspace
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", 443)),
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.1.2.3", 443))])
    status, body = _create(client, key, "https://rebind.example.com/hook")
    assert status == 422, body
    assert "rebind.example.com" in body["error"]["message"] and "non-public" in body["error"]["message"]


def test_a_name_that_does_not_resolve_yet_is_accepted(client, workspace, monkeypatch):
    """DNS may lag a new receiver: it is checked again at every delivery."""
    _, key = workspace

    def nowhere(*_a, **_k):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", nowhere)
    status, body = _create(client, key, "https://not-yet.example.com/hook")
    assert status == 201, body


class Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_a_delivery_refused_for_its_target_fails_at_once_and_the_log_says_why(
        client, workspace, receiver, private_ok, now_clock, monkeypatch):
    _, key = workspace
    _, hook = _create(client, key, receiver.url + "?token=very-secret-path")
    monkeypatch.setenv("DOCPUB_WEBHOOKS_ALLOW_PRIVATE", "false")  # the receiver is on loopback
    doc = publish(client, key)
    send_feedback(client, doc["share_id"], {"message": "m"})
    capture = Capture()
    logging.getLogger("docpub.webhooks").addHandler(capture)
    try:
        _worker().run_once()
    finally:
        logging.getLogger("docpub.webhooks").removeHandler(capture)
    assert receiver.received == []
    [d] = _deliveries(client, key, hook["webhook_id"])
    assert (d["status"], d["attempts"], d["next_attempt_at"]) == ("failed", 1, None), d
    assert "target refused" in d["last_error"]
    now_clock.advance(3600)
    _worker().run_once()
    assert _deliveries(client, key, hook["webhook_id"])[0]["attempts"] == 1  # never tried again
    [line] = [json.loads(x) for x in capture.lines if "webhook delivery" in x]
    assert line["status"] == "failed" and "target refused" in line["error"]
    assert "very-secret-path" not in " ".join(capture.lines) and hook["secret"] not in " ".join(capture.lines)


def test_an_answer_that_is_not_2xx_is_still_retried(client, workspace, receiver, private_ok, now_clock):
    receiver.answers = [503]
    _, key = workspace
    _, hook = _create(client, key, receiver.url)
    doc = publish(client, key)
    send_feedback(client, doc["share_id"], {"message": "m"})
    _worker().run_once()
    [d] = _deliveries(client, key, hook["webhook_id"])
    assert (d["status"], d["last_error"]) == ("pending", "answered HTTP 503")

