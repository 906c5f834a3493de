"""A tiny cookie-keeping form client over chalice.test.Client, for dashboard tests."""
from __future__ import annotations

import re
import uuid
from html import unescape
from http.cookies import SimpleCookie
from urllib.parse import urlencode

FAST_ARGON2 = {"DOCPUB_ARGON2_TIME_COST": "1", "DOCPUB_ARGON2_MEMORY_KIB": "256", "DOCPUB_ARGON2_PARALLELISM": "1"}


class Page:
    def __init__(self, response):
        self.status = response.status_code
        self.headers = response.headers
        body = response.body
        self.text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")  # downloads are binary

    @property
    def location(self) -> str:
        return self.headers.get("location") or self.headers.get("Location") or ""

    def csrf(self) -> str:
        match = re.search(r'name="csrf_token" value="([^"]+)"', self.text)
        assert match, "no CSRF token on the page"
        return unescape(match.group(1))

    def __contains__(self, text: str) -> bool:
        return text in self.text


def outbox_messages(data_dir: str | None = None) -> list[dict]:
    """The outbox of the data folder under test, newest first. In-process (no `data_dir`), the
    mail steps run after their answer (services/quiet_steps.py) in threads of this process:
    they are waited for first."""
    import os

    from chalicelib import wiring
    from chalicelib.adapters.mail.outbox import read_outbox

    if data_dir is None:
        wiring.settle_quiet_steps()
    folder = os.path.join(data_dir or os.environ["DOCPUB_DATA_DIR"], "outbox")
    return read_outbox(folder, limit=1000)


def _waited(find, data_dir: str | None, seconds: float = 15.0):
    """`find(messages)` once it is truthy; a stack in another process mails shortly after its
    answer, so its outbox folder is read again until a deadline (never a fixed sleep)."""
    import time

    deadline = time.monotonic() + (seconds if data_dir is not None else 0)
    while True:
        found = find(outbox_messages(data_dir))
        if found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


def mail_link(email: str, kind: str, data_dir: str | None = None) -> str:
    """The link of the newest message of `kind` to `email`."""
    def link(messages):
        return next((m["links"][0] for m in messages if m["to"] == email and m["kind"] == kind), None)

    found = _waited(link, data_dir)
    if found is None:
        raise AssertionError(f"no {kind} mail to {email} in the outbox")
    return found


def mail_codes(email: str, data_dir: str | None = None) -> list[str]:
    """The recipient codes (contract 7f) mailed to `email`, newest first (the subject starts with
    it); from a stack in another process, once there is one."""
    return _waited(lambda messages: [m["subject"].split(" ", 1)[0] for m in messages
                                     if m["to"] == email and m["kind"] == "recipient_code"], data_dir)


class DashboardClient:
    def __init__(self, client, headers: dict | None = None):
        self.client = client
        self.cookies: dict[str, str] = {}
        self.extra = headers or {}

    def _headers(self, extra: dict | None = None) -> dict:
        headers = dict(self.extra)
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        headers.update(extra or {})
        return headers

    def _keep(self, response) -> Page:
        raw = response.headers.get("set-cookie") or response.headers.get("Set-Cookie")
        values = raw if isinstance(raw, list) else ([raw] if raw else [])
        for value in values:
            for line in value.split("\n") if isinstance(value, str) else value:
                jar = SimpleCookie()
                jar.load(line)
                for name, morsel in jar.items():
                    if morsel["max-age"] == "0":
                        self.cookies.pop(name, None)
                    else:
                        self.cookies[name] = morsel.value
        return Page(response)

    def get(self, path: str, headers: dict | None = None) -> Page:
        return self._keep(self.client.http.get(path, headers=self._headers(headers)))

    def post(self, path: str, fields: dict, csrf: str | None = None, headers: dict | None = None) -> Page:
        data = dict(fields)
        if csrf is not None:
            data["csrf_token"] = csrf
        body = urlencode(data).encode()
        h = self._headers({"Content-Type": "application/x-www-form-urlencoded", **(headers or {})})
        return self._keep(self.client.http.post(path, headers=h, body=body))

    def post_multipart(self, path: str, fields: dict, files: dict, csrf: str | None = None) -> Page:
        boundary = "----docpubtest" + uuid.uuid4().hex
        parts = []
        data = dict(fields)
        if csrf is not None:
            data["csrf_token"] = csrf
        for name, value in data.items():
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
                         + str(value).encode("utf-8") + b"\r\n")
        for name, (filename, content) in files.items():
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                         f'Content-Type: text/html\r\n\r\n'.encode() + content + b"\r\n")
        body = b"".join(parts) + f"--{boundary}--\r\n".encode()
        h = self._headers({"Content-Type": f"multipart/form-data; boundary={boundary}"})
        return self._keep(self.client.http.post(path, headers=h, body=body))

    # flows
    def submit(self, form_path: str, post_path: str, fields: dict) -> Page:
        """GET a form page (for its CSRF token), then POST the form."""
        return self.post(post_path, fields, csrf=self.get(form_path).csrf())

    def sign_up(self, email="owner@example.com", password="correct horse battery", workspace="Acme") -> Page:
        """Sign up, then confirm the email through the link the outbox received (signs in)."""
        page = self.submit("/dashboard/sign-up", "/dashboard/sign-up",
                           {"email": email, "password": password, "workspace_name": workspace})
        assert page.status == 200 and "Check your email" in page.text, page.text
        page = self.follow_mail_link(email, "verify")
        assert page.status == 303, page.text
        return page

    def follow_mail_link(self, email: str, kind: str) -> Page:
        """Open the newest `kind` link mailed to `email` (outbox) and press its button."""
        link = mail_link(email, kind)
        path = link[link.index("/dashboard/"):]
        form = self.get(path)
        token = path.split("token=", 1)[1]
        return self.post(path.split("?", 1)[0], {"token": token}, csrf=form.csrf())

    def sign_in(self, email="owner@example.com", password="correct horse battery") -> Page:
        return self.submit("/dashboard/sign-in", "/dashboard/sign-in", {"email": email, "password": password})

    def token(self) -> str:
        return self.get("/dashboard/account").csrf()
