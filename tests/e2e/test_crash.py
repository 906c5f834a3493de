"""Crash test: every acknowledged write survives a SIGKILL of the whole `make run` tree.

Measured on the emulator-based stack: 5 of 5 acknowledged documents, and a
workspace and key made by `make admin`, were gone after a SIGKILL. Here, ten
rounds on one data folder: publish, edit, create a key (admin CLI), post viewer
feedback, sign up in the dashboard, while a writer keeps publishing versions;
then SIGKILL every process of the stack at once (as an OOM kill or a power cut
of the processes does) and start it again. Everything acknowledged, in this
round and every round before, must be there; versions stay gapless.
"""
from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from html import unescape

import httpx
import pytest

from tests.dashboard_client import FAST_ARGON2
from tests.stack import LocalStack

pytestmark = pytest.mark.e2e

ROUNDS = 10
# This test is about durability, not limits: the per-key write limit (60 a minute) is lifted,
# because ten rounds of writes take well under a minute now that make run answers without
# Nagle's 40 ms delay (scripts/serve_local.py), and its 429 would read as a lost write.
# The workspace's own limit (120 a minute, a constant) stays, and the rounds stay under it.
STACK_ENV = {**FAST_ARGON2, "DOCPUB_WRITE_RATE_LIMIT": "100000"}
END = "<!--end-->"


@dataclass
class Acknowledged:
    documents: dict[str, str] = field(default_factory=dict)  # document id -> latest acknowledged HTML
    versions: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # id -> [(number, version id)]
    keys: list[str] = field(default_factory=list)
    feedback: dict[str, str] = field(default_factory=dict)  # feedback id -> message
    sessions: list[dict] = field(default_factory=list)  # dashboard cookies of signed-up accounts


def _sign_up(stack: LocalStack, email: str) -> dict:
    with httpx.Client(base_url=stack.base_url, timeout=60) as browser:
        form = browser.get("/dashboard/sign-up")
        csrf = unescape(re.search(r'name="csrf_token" value="([^"]+)"', form.text).group(1))
        page = browser.post("/dashboard/sign-up", data={
            "email": email, "password": "correct horse battery staple", "workspace_name": email.split("@")[0],
            "csrf_token": csrf})
        assert page.status_code == 200 and "Check your email" in page.text, page.text[:500]
        from tests.chromium import mail_link_in

        link = mail_link_in(stack.data_dir, email, "verify")
        form = browser.get(link)
        csrf = unescape(re.search(r'name="csrf_token" value="([^"]+)"', form.text).group(1))
        page = browser.post("/dashboard/verify", data={"token": link.split("token=")[1], "csrf_token": csrf})
        assert page.status_code == 303 and "/dashboard/keys" in page.headers["location"], page.text[:500]
        return dict(browser.cookies)


class Writer(threading.Thread):
    """Publishes new versions of one document until the stack dies under it."""

    def __init__(self, stack: LocalStack, key: str, document_id: str, acked: Acknowledged):
        super().__init__(daemon=True)
        self.stack, self.key, self.document_id, self.acked = stack, key, document_id, acked
        self.stop = threading.Event()
        self.errors: list[str] = []

    def run(self) -> None:
        with httpx.Client(base_url=self.stack.base_url, headers={"X-Api-Key": self.key}, timeout=10) as http:
            n = 0
            while not self.stop.is_set():
                n += 1
                html = f"<p>writer {n}</p>"
                try:
                    r = http.post("/api/v1/publish", json={"title": "writer", "html": html,
                                                           "document_id": self.document_id})
                except httpx.HTTPError:
                    return  # the stack died mid-request: that write was never acknowledged
                if r.status_code == 200:
                    body = r.json()
                    self.acked.versions[self.document_id].append((body["version_number"], body["version_id"]))
                    self.acked.documents[self.document_id] = html
                elif r.status_code >= 500:
                    self.errors.append(f"{r.status_code} {r.text[:200]}")
                    return


def _verify(stack: LocalStack, acked: Acknowledged, owner_key: str) -> None:
    with stack.client(owner_key) as http:
        for document_id, html in acked.documents.items():
            got = http.get(f"/api/v1/documents/{document_id}", params={"include_html": "true"})
            assert got.status_code == 200, got.text
            detail = got.json()
            numbers = [v["number"] for v in detail["versions"]]
            assert sorted(numbers) == list(range(1, len(numbers) + 1)), "versions are not gapless"
            stored = {v["version_id"]: v["number"] for v in detail["versions"]}
            for number, version_id in acked.versions[document_id]:
                assert stored.get(version_id) == number, f"acknowledged version {number} of {document_id} lost"
                version = http.get(f"/api/v1/documents/{document_id}",
                                   params={"include_html": "true", "version_id": version_id})
                assert version.status_code == 200 and version.json()["html"], version.text
            # the latest stored version is at least the last acknowledged one
            assert max(numbers) >= max(number for number, _ in acked.versions[document_id])
            if max(numbers) == max(number for number, _ in acked.versions[document_id]):
                assert detail["html"] == html
        listed = http.get("/api/v1/feedback", params={"status": "all", "limit": 100}).json()["feedback"]
        messages = {item["feedback_id"]: item["message"] for item in listed}
        for feedback_id, message in acked.feedback.items():
            assert messages.get(feedback_id) == message, f"acknowledged feedback {feedback_id} lost"
    for key in acked.keys:
        r = httpx.get(stack.base_url + "/api/v1/me", headers={"X-Api-Key": key}, timeout=30)
        assert r.status_code == 200, f"a key made by the admin CLI is gone: {r.text}"
    for cookies in acked.sessions:
        with httpx.Client(base_url=stack.base_url, cookies=cookies, timeout=30) as browser:
            page = browser.get("/dashboard/keys")
            assert page.status_code == 200, "a signed-up account or its session is gone"


def test_every_acknowledged_write_survives_sigkill_of_the_whole_stack(tmp_path):
    data_dir = tmp_path / "data"
    stack = LocalStack(data_dir, env=STACK_ENV, via_make=True).start()
    acked = Acknowledged()
    owner = stack.admin("create-workspace", "--name", "Crash", "--plan", "pro")
    owner_key = owner["api_key"]
    acked.keys.append(owner_key)
    try:
        for round_ in range(ROUNDS):
            with stack.client(owner_key) as http:
                r = http.post("/api/v1/publish", json={"title": f"round {round_}", "html": f"<p>{round_}</p>{END}"})
                assert r.status_code == 200, r.text
                doc = r.json()
                acked.versions[doc["document_id"]] = [(doc["version_number"], doc["version_id"])]
                acked.documents[doc["document_id"]] = f"<p>{round_}</p>{END}"
                edited = f"<p>{round_}</p><p>edited</p>{END}"
                r = http.post(f"/api/v1/documents/{doc['document_id']}/edit",
                              json={"edits": [{"old_string": END, "new_string": f"<p>edited</p>{END}"}]})
                assert r.status_code == 200, r.text
                acked.versions[doc["document_id"]].append((r.json()["version_number"], r.json()["version_id"]))
                acked.documents[doc["document_id"]] = edited
                feedback = httpx.post(f"{doc['share_url']}/feedback", json={"message": f"feedback {round_}"},
                                      timeout=30)
                assert feedback.status_code == 201, feedback.text
                acked.feedback[feedback.json()["feedback_id"]] = f"feedback {round_}"
            created = stack.admin("create-key", owner["workspace_id"], "--name", f"round {round_}")
            assert created.get("api_key"), created
            acked.keys.append(created["api_key"])
            acked.sessions.append(_sign_up(stack, f"person{round_}@example.com"))

            # a writer is mid-flight when the stack dies
            with stack.client(owner_key) as http:
                target = http.post("/api/v1/publish", json={"title": "writer", "html": "<p>writer 0</p>"}).json()
            acked.versions[target["document_id"]] = [(target["version_number"], target["version_id"])]
            acked.documents[target["document_id"]] = "<p>writer 0</p>"
            writer = Writer(stack, owner_key, target["document_id"], acked)
            writer.start()
            while len(acked.versions[target["document_id"]]) < 3 and writer.is_alive():
                threading.Event().wait(0.01)
            stack.kill_tree()
            writer.stop.set()
            writer.join(timeout=30)
            assert writer.errors == []

            stack = LocalStack(data_dir, port=stack.port, env=STACK_ENV, via_make=True).start()
            _verify(stack, acked, owner_key)
    finally:
        stack.stop()
