"""A local webhook receiver for tests: records every request, answers from a script."""
from __future__ import annotations

import http.server
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Received:
    path: str
    headers: dict
    body: bytes


@dataclass
class Receiver:
    """`answers`: statuses to give in turn (the last one repeats); "garbage" answers a
    non-HTTP line, ("sleep", s) waits s seconds first, ("redirect", url) answers 302."""
    answers: list = field(default_factory=lambda: [200])
    received: list = field(default_factory=list)

    def __post_init__(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                receiver.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                answer = receiver.answers[min(len(receiver.received) - 1, len(receiver.answers) - 1)]
                if isinstance(answer, tuple) and answer[0] == "sleep":
                    time.sleep(answer[1])
                    answer = 200
                if answer == "garbage":
                    self.wfile.write(b"this is not HTTP\r\n\r\n")
                    return
                if isinstance(answer, tuple) and answer[0] == "redirect":
                    self.send_response(302)
                    self.send_header("Location", answer[1])
                    self.end_headers()
                    return
                self.send_response(answer)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait_for(self, count: int, timeout: float = 30) -> list:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.received

    def close(self):
        self.server.shutdown()
        self.server.server_close()
