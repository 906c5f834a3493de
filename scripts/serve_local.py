"""The server worker of `make run`: `chalice local`, with the contract's answers.

API Gateway (and chalice local) answer an unknown path with 403 "Missing
Authentication Token"; in AWS a GatewayResponse in infra/ rewrites it to 404.
This applies the same rewrite locally, hands the app the connection's peer
address as its source IP (chalice local hard-codes 127.0.0.1), raises the listen backlog (chalice
local keeps socketserver's 5, so a burst of connections saw resets), bounds the
threads (one per connection, at most MAX_CONNECTIONS, idle ones closed), streams
upload PUTs to storage, and serves until stopped. It never reloads itself: the supervisor
(scripts.local_stack) watches the source and starts a fresh worker; this
process dies with its supervisor (scripts.processes).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys

from chalice import local as chalice_local

from scripts.processes import die_with_parent, quiet_aws_logging

NOT_FOUND_JSON = json.dumps({"error": {"code": "not_found", "message": "No such route."}}).encode()
NOT_FOUND_HTML = (b"<!doctype html><meta charset=utf-8><title>Not found</title>"
                  b"<h1>Not found</h1><p>There is nothing at this address.</p>")


def _patch_route_miss() -> None:
    original = chalice_local.LocalGateway.handle_request

    def handle_request(self, method, path, headers, body):
        try:
            return original(self, method, path, headers, body)
        except chalice_local.ForbiddenError:
            from chalicelib.entrypoints.http import HTML_SECURITY_HEADERS

            wants_html = path.startswith("/d/") or path.startswith("/dashboard")
            headers = ({"Content-Type": "text/html; charset=utf-8", **HTML_SECURITY_HEADERS} if wants_html
                       else {"Content-Type": "application/json; charset=utf-8"})
            return {"statusCode": 404,
                    "headers": headers,
                    "multiValueHeaders": {},
                    "body": (NOT_FOUND_HTML if wants_html else NOT_FOUND_JSON).decode()}

    chalice_local.LocalGateway.handle_request = handle_request

    # A HEAD answer has headers only (http.server would otherwise write the body
    # and corrupt the next response on a keep-alive connection).
    send = chalice_local.ChaliceRequestHandler._send_http_response

    def send_http_response(self, code, headers, body):
        if self.command == "HEAD" and body:
            headers = dict(headers)
            length = len(body if isinstance(body, bytes) else body.encode("utf-8"))
            self.send_response(code)
            for name, value in headers.items():
                for item in (value if isinstance(value, list) else [value]):
                    self.send_header(name, item)
            self.send_header("Content-Length", str(length))
            self.end_headers()
            return
        return send(self, code, headers, body)

    chalice_local.ChaliceRequestHandler._send_http_response = send_http_response


def _patch_peer_address() -> None:
    """The app sees the connection's peer address as its source IP (API Gateway's
    `identity.sourceIp`): chalice local writes a fixed 127.0.0.1, so every person
    reaching `make run` shared one budget of every per-address limit (issue 33).
    chalice local makes one gateway (and event converter) per connection, so the
    address is set once, when the connection is set up."""
    handler = chalice_local.ChaliceRequestHandler
    original_setup = handler.setup

    def setup(self):
        original_setup(self)
        peer = self.client_address[0] if isinstance(self.client_address, tuple) else ""
        if peer:
            self.local_gateway.event_converter.LOCAL_SOURCE_IP = peer

    handler.setup = setup


def _answer_without_nagle_delay() -> None:
    """TCP_NODELAY on every connection (socketserver sets it when this is True). chalice local
    writes an answer's headers, then its body: with Nagle's algorithm the body waited for the
    client's delayed ACK, ~40 ms on every request of a kept-alive connection after its first."""
    chalice_local.ChaliceRequestHandler.disable_nagle_algorithm = True


def _patch_unsupported_methods() -> None:
    """http.server answers methods without a `do_X` (TRACE, QUERY, …) with its own
    501 HTML page; answer them like every other missing method: the contract's 405."""
    from chalice.local import ChaliceRequestHandler, RouteMatcher

    def method_not_allowed(self):
        length = _declared_length(self)
        if length is None:
            return _unreadable_length(self)
        if length:
            self.rfile.read(length)
        app = self.local_gateway._app_object
        try:
            route = RouteMatcher(list(app.routes)).match_route(self.path).route
        except ValueError:
            route = None
        if route is None:
            return self._send_http_response(404, {"Content-Type": "application/json; charset=utf-8"},
                                            NOT_FOUND_JSON)
        allowed = ", ".join(sorted(m for m, e in app.routes[route].items() if e.view_name != "method_not_allowed"))
        body = json.dumps({"error": {"code": "method_not_allowed",
                                     "message": f"This route accepts {allowed}."}}).encode()
        self._send_http_response(405, {"Content-Type": "application/json; charset=utf-8", "Allow": allowed}, body)

    def any_other_method(self, name):
        # http.server looks up `do_<METHOD>`; every method chalice does not route lands here.
        if name.startswith("do_"):
            return method_not_allowed.__get__(self)
        raise AttributeError(name)

    ChaliceRequestHandler.__getattr__ = any_other_method


# A refused body is drained (read and dropped in small pieces, so the client
# sees the answer instead of a reset) up to this much; past it the connection closes.
DRAIN_MAX_BYTES = 64 * 1024 * 1024


def _patch_admission() -> None:
    """The route's bounds (chalicelib/entrypoints/admission.py, bounds.py), decided from the
    request line and headers before the body is read: a stranger's or an
    oversized body never reaches memory (chalice local would read it whole).
    `Expect: 100-continue` gets the refusal instead of the 100."""
    from chalicelib.entrypoints import admission
    from chalicelib.errors import DocpubError

    handler = chalice_local.ChaliceRequestHandler
    generic = handler._generic_handle

    def refusal(self) -> bool:
        """Send the refusal and True, or False to go on."""
        size = _declared_length(self)
        if size is None:
            _unreadable_length(self)
            return True
        try:
            headers = {name: value for name, value in self.headers.items()}
            app = self.local_gateway._app_object
            try:
                template = chalice_local.RouteMatcher(list(app.routes)).match_route(self.path).route
            except ValueError:
                template = None
            admission.admit(self.command, self.path, admission.CaseInsensitive(headers), size, verify_key=True,
                            routed=admission.routed(app, template, self.command))
            return False
        except DocpubError as exc:
            answer = admission.refusal_response(self.command, self.path, exc).to_dict()
        except Exception:  # noqa: BLE001 - storage trouble: let the app answer it the usual way
            return False
        self.close_connection = True
        headers = dict(answer["headers"])
        headers["Connection"] = "close"
        body = answer["body"]
        self._send_http_response(answer["statusCode"], headers, body)
        return True

    def generic_handle(self):
        if getattr(self, "_refused", False):
            return
        if refusal(self):
            _drain(self)
            return
        if _stream_upload(self) or _stream_export(self):
            return
        return generic(self)

    def handle_expect_100(self):
        if refusal(self):
            self._refused = True
            return False  # http.server then skips the method: the body is never sent
        return original_expect(self)

    original_expect = handler.handle_expect_100
    handler._generic_handle = generic_handle
    handler.handle_expect_100 = handle_expect_100
    for name in ("do_GET", "do_PUT", "do_POST", "do_HEAD", "do_DELETE", "do_PATCH", "do_OPTIONS"):
        setattr(handler, name, generic_handle)


_UPLOAD_PATH = re.compile(r"/uploads/([^/?#]+)")


def _stream_upload(handler) -> bool:
    """PUT /uploads/<id> (the embedded store's upload_url), answered here: the body goes
    from the socket to the blob store a chunk at a time (services/uploads.receive, at
    most 1 MiB in memory), where chalice local would read all of it (up to 36 MiB) into
    memory first. True once answered."""
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(handler.path)
    match = _UPLOAD_PATH.fullmatch(parts.path)
    if handler.command != "PUT" or match is None:
        return False
    from chalicelib import wiring
    from chalicelib.entrypoints.http import as_error, error_response

    length = _declared_length(handler) or 0
    token = (parse_qs(parts.query).get("token") or [""])[0]
    counting = _Counting(handler.rfile)
    try:
        wiring.uploads().receive(match.group(1), token, counting, length)
        answer = {"statusCode": 204, "headers": {}, "body": None}
    except CLIENT_GONE:
        raise  # nothing was stored; one log line (_patch_dropped_connections)
    except Exception as exc:  # noqa: BLE001 - the contract's error body, as the app's route answers
        answer = error_response(as_error(exc)).to_dict()
        if counting.read_bytes < length:  # refused before (or while) reading: the rest is not read
            handler.close_connection = True
            answer["headers"] = {**dict(answer["headers"]), "Connection": "close"}
    handler._send_http_response(answer["statusCode"], dict(answer["headers"]), answer["body"])
    return True


_EXPORT_PATH = re.compile(r"/exports/([^/?#]+)/download")


def _stream_export(handler) -> bool:
    """GET /exports/<id>/download (the embedded store's signed export URL), answered here: the
    zip goes from the data folder to the socket a chunk at a time (services/exports.chunks),
    where chalice local would hold the whole workspace's zip in memory. True once answered."""
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(handler.path)
    match = _EXPORT_PATH.fullmatch(parts.path)
    if handler.command not in ("GET", "HEAD") or match is None:
        return False
    from chalicelib import wiring
    from chalicelib.entrypoints.http import as_error, error_response

    query = parse_qs(parts.query)
    try:
        service = wiring.exports()
        file = service.download(match.group(1), (query.get("until") or [""])[0], (query.get("sig") or [""])[0])
        chunks = service.chunks(file)
    except Exception as exc:  # noqa: BLE001 - the contract's error body, as the app's route answers
        answer = error_response(as_error(exc)).to_dict()
        handler._send_http_response(answer["statusCode"], dict(answer["headers"]), answer["body"])
        return True
    handler.send_response(200)
    for name, value in (("Content-Type", "application/zip"), ("Content-Length", str(file.size_bytes)),
                        ("Content-Disposition", f'attachment; filename="{file.filename}"'),
                        ("X-Content-Type-Options", "nosniff"), ("Content-Security-Policy", "sandbox"),
                        ("Cache-Control", "private, no-store"), ("Referrer-Policy", "no-referrer")):
        handler.send_header(name, value)
    handler.end_headers()
    if handler.command == "GET":
        for chunk in chunks:
            handler.wfile.write(chunk)
    return True


class _Counting:
    """The request body as a file that counts what was read from it."""

    def __init__(self, raw):
        self.raw = raw
        self.read_bytes = 0

    def read(self, size: int) -> bytes:
        chunk = self.raw.read(size)
        self.read_bytes += len(chunk)
        return chunk


def _declared_length(handler) -> "int | None":
    """The request's Content-Length (0 without one), or None when it is not a number
    of bytes (chalice local's int() would raise and drop the connection unanswered)."""
    declared = (handler.headers.get("content-length") or "0").strip()
    return int(declared) if declared.isascii() and declared.isdigit() else None


def _unreadable_length(handler) -> None:
    """400 `invalid_request` (a header the server cannot read, contract section 4), then close:
    the body's end is unknown."""
    from chalicelib.entrypoints import admission
    from chalicelib.errors import BadRequest

    error = BadRequest("The Content-Length header is not a number of bytes.")
    answer = admission.refusal_response(handler.command, handler.path, error).to_dict()
    handler.close_connection = True
    handler._send_http_response(answer["statusCode"], {**dict(answer["headers"]), "Connection": "close"},
                                answer["body"])


def _drain(handler) -> None:
    declared = (handler.headers.get("content-length") or "0").strip()
    left = int(declared) if declared.isdigit() else 0
    if left > DRAIN_MAX_BYTES:
        return
    try:
        while left > 0:
            chunk = handler.rfile.read(min(left, 65536))
            if not chunk:
                break
            left -= len(chunk)
    except OSError:
        pass


# What http.server reads before it gives up on a request line or a header line (and how many
# header fields): its own limits, answered in the contract's shape (414 / 431) below.
REQUEST_LINE_MAX_BYTES = 65536
HEADER_LINE_MAX_BYTES = 65536
HEADER_FIELDS_MAX = 100
# A refused head is read and dropped up to this much (within HEAD_DRAIN_SECONDS), so the
# client gets the answer instead of a reset; past it the connection just closes.
HEAD_DRAIN_MAX_BYTES = 1024 * 1024
HEAD_DRAIN_SECONDS = 1.0


def _patch_server_errors() -> None:
    """http.server's own refusals (a request line over 64 KiB: 414; a header line over 64 KiB
    or more than 100 header fields: 431; an unreadable request line: 400) were an HTML page:
    the contract's error body instead (section 3), and one access-log line, not two."""
    from chalicelib import errors

    def send_error(self, code, message=None, explain=None):
        status = int(code)
        if status == 414:
            error: errors.DocpubError = errors.UriTooLong(
                f"The request line is longer than {REQUEST_LINE_MAX_BYTES:,} bytes: shorten the URL "
                "(long values belong in a JSON body).")
        elif status == 431:
            error = errors.HeadersTooLarge(
                f"The request's headers are over the server's limits (a header line over "
                f"{HEADER_LINE_MAX_BYTES:,} bytes, or more than {HEADER_FIELDS_MAX} header fields).")
        elif 400 <= status < 500:
            error = errors.BadRequest(str(message or "The request could not be read.")[:200], status=status)
        else:
            error = errors.InternalError(str(message or "The server could not answer.")[:200], status=status)
        body = json.dumps(error.body()).encode()
        self.close_connection = True
        if status in (414, 431):
            _drain_head(self)
        try:
            self.send_response(status)  # also the access-log line
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except OSError:
            pass  # the client is gone: nothing to tell it

    chalice_local.ChaliceRequestHandler.send_error = send_error


def _drain_head(handler) -> None:
    """Read and drop the rest of a refused request's head (bounded in bytes and time)."""
    try:
        handler.connection.settimeout(HEAD_DRAIN_SECONDS)
        left = HEAD_DRAIN_MAX_BYTES
        while left > 0:
            line = handler.rfile.readline(min(left, 65537))
            if line in (b"", b"\r\n", b"\n"):
                break
            left -= len(line)
    except OSError:
        pass


# A client that goes away mid-answer is routine (a closed tab, a cancelled curl): one line.
CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError)


def _patch_dropped_connections() -> None:
    """socketserver prints a traceback for any exception in a handler; a client that dropped
    its connection is one log line instead (anything else keeps its traceback)."""
    server = chalice_local.ThreadedHTTPServer
    original = server.handle_error

    def handle_error(self, request, client_address):
        error = sys.exc_info()[1]
        if isinstance(error, CLIENT_GONE):
            peer = client_address[0] if isinstance(client_address, tuple) else client_address
            logging.getLogger("docpub.server").info("client closed the connection",
                                                    extra={"client": peer, "error": type(error).__name__})
            return
        original(self, request, client_address)

    server.handle_error = handle_error


LISTEN_BACKLOG = 1024  # the kernel caps it at net.core.somaxconn
# At most this many connections are served at once, one thread each (chalice local
# starts a thread per connection, without a bound: 1,000 waiting requests held 1,003
# threads); past it, new connections wait in the listen backlog until one ends. An idle
# keep-alive connection (or a client that stops sending) ends after IDLE_SECONDS of
# silence, so idle sockets cannot hold the threads.
MAX_CONNECTIONS = 256
IDLE_SECONDS = 30


def _raise_listen_backlog() -> None:
    chalice_local.ThreadedHTTPServer.request_queue_size = LISTEN_BACKLOG


def _bound_threads() -> None:
    import threading

    server = chalice_local.ThreadedHTTPServer
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
    start_thread = server.process_request
    serve = server.process_request_thread

    def process_request(self, request, client_address):
        slots.acquire()  # the accept loop waits here while every slot is busy
        try:
            start_thread(self, request, client_address)
        except BaseException:
            slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            serve(self, request, client_address)
        finally:
            slots.release()

    server.process_request = process_request
    server.process_request_thread = process_request_thread
    chalice_local.ChaliceRequestHandler.timeout = IDLE_SECONDS


def _start_webhook_worker() -> None:
    """Webhook deliveries (contract 7c) are sent by a thread of this process: the outbox
    is in the store, so a worker killed mid-way loses nothing (the next one sends it)."""
    from chalicelib import config

    if not config.webhooks_worker_enabled():
        return
    import threading

    from chalicelib.entrypoints.worker import run_worker

    threading.Thread(target=run_worker, name="docpub-webhooks", daemon=True).start()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--stage", default="local")
    parser.add_argument("--no-autoreload", action="store_true", help="accepted, no effect: this process never reloads")
    args = parser.parse_args()
    supervisor = os.environ.get("DOCPUB_SUPERVISOR_PID")
    die_with_parent(signal.SIGKILL, int(supervisor) if supervisor else None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
    quiet_aws_logging()
    _patch_route_miss()
    _patch_peer_address()
    _answer_without_nagle_delay()
    _patch_unsupported_methods()
    _patch_admission()
    _patch_server_errors()
    _patch_dropped_connections()
    _raise_listen_backlog()
    _bound_threads()
    from chalice.cli import create_local_server
    from chalice.cli.factory import CLIFactory

    project_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    factory = CLIFactory(project_dir=project_dir, environ=os.environ)
    server = create_local_server(factory, args.host, args.port, args.stage)
    _start_webhook_worker()
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server.server_close()
    # Nothing is buffered in this process (every write is committed before its
    # answer): skip the interpreter's teardown, which took ~1 s with the app loaded.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
