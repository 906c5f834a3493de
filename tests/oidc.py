"""A real OpenID provider for the SSO tests: the certified `oidc-provider` package (npm)
on Node, run by scripts/oidc_provider.mjs on a free loopback port with a test client,
people (verified and unverified emails, two domains) and its own signing key.

scripts/oidc-provider.sh installs the pinned package into .oidc-provider/ (git-ignored;
DOCPUB_OIDC_PROVIDER_DIR elsewhere) on first use, as tests/axe.py installs axe-core.
Without node/npm the tests that need it skip. `sign_in_at_provider` fills the provider's
own login form over HTTP (the browser test uses Chromium instead)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from functools import lru_cache
from pathlib import Path
from urllib.parse import urljoin

import pytest

from tests.stack import free_port

PROJECT_DIR = Path(__file__).resolve().parent.parent
PROVIDER_DIR = Path(os.environ.get("DOCPUB_OIDC_PROVIDER_DIR") or PROJECT_DIR / ".oidc-provider")
SCRIPT = PROJECT_DIR / "scripts" / "oidc_provider.mjs"
START_SECONDS = 30
CLIENT_ID = "docpub-test"
CLIENT_SECRET = "docpub-test-secret-" + "x" * 20
USERS = {
    "ada": {"email": "ada@example.com", "email_verified": True, "name": "Ada"},
    "bob": {"email": "bob@example.com", "email_verified": True, "name": "Bob"},
    "eve": {"email": "eve@example.com", "email_verified": False, "name": "Eve"},
    "cy": {"email": "cy@example.org", "email_verified": True, "name": "Cy"},
    "owner": {"email": "owner@example.com", "email_verified": True, "name": "Owner"},
}


@lru_cache(maxsize=1)
def installed() -> Path:
    modules = PROVIDER_DIR / "node_modules"
    if not (modules / "oidc-provider" / "package.json").exists():
        if shutil.which("npm") is None or shutil.which("node") is None:
            pytest.skip("oidc-provider is not installed and node/npm are not here (scripts/oidc-provider.sh)")
        done = subprocess.run([str(PROJECT_DIR / "scripts" / "oidc-provider.sh"), str(PROVIDER_DIR)],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            pytest.skip(f"scripts/oidc-provider.sh could not install oidc-provider: {done.stderr.strip()[-300:]}")
    return modules


class Provider:
    """One running provider process."""

    def __init__(self, redirect_uri: str, log_dir: Path):
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.client_id, self.client_secret = CLIENT_ID, CLIENT_SECRET
        self.redirect_uri = redirect_uri
        self._log = open(log_dir / "oidc-provider.log", "w")  # noqa: SIM115 - closed in stop()
        env = {**os.environ, "OIDC_PORT": str(self.port), "OIDC_ISSUER": self.issuer, "OIDC_CLIENT_ID": CLIENT_ID,
               "OIDC_CLIENT_SECRET": CLIENT_SECRET, "OIDC_REDIRECT_URI": redirect_uri,
               "OIDC_USERS": json.dumps(USERS), "OIDC_MODULES": str(installed())}
        self.process = subprocess.Popen(["node", str(SCRIPT)], cwd=PROJECT_DIR, env=env, stdout=subprocess.PIPE,
                                        stderr=self._log, text=True)
        assert self.process.stdout is not None
        import select

        ready, _, _ = select.select([self.process.stdout], [], [], START_SECONDS)
        line = self.process.stdout.readline() if ready else ""  # "ready <issuer>", or EOF if it died
        if not line.startswith("ready "):
            self.stop()
            raise RuntimeError(f"oidc-provider did not start: {line!r} (see {log_dir}/oidc-provider.log)")

    def env(self) -> dict[str, str]:
        """Docpub's settings for this provider."""
        return {"DOCPUB_OIDC_ISSUER": self.issuer, "DOCPUB_OIDC_CLIENT_ID": self.client_id,
                "DOCPUB_OIDC_CLIENT_SECRET": self.client_secret, "DOCPUB_OIDC_NAME": "Example ID"}

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self._log.close()


def sign_in_at_provider(authorization_url: str, login: str, redirect_uri: str, timeout: float = 10) -> str:
    """Play the person at the provider: open the authorization URL, fill its login form
    (the development form: a login and any password) and follow the redirects until the
    provider sends the browser back to `redirect_uri`; that URL (code, state, iss)."""
    import re

    import httpx

    with httpx.Client(timeout=timeout, follow_redirects=False) as browser:
        url, deadline = authorization_url, time.monotonic() + timeout
        answer = browser.get(url)
        while time.monotonic() < deadline:
            if answer.status_code in (302, 303):
                url = urljoin(url, answer.headers["location"])
                if url.startswith(redirect_uri):
                    return url
                answer = browser.get(url)
                continue
            form = re.search(r'<form[^>]*action="([^"]+)"[^>]*method="post"', answer.text)
            assert answer.status_code == 200 and form, f"{answer.status_code} at the provider: {answer.text[:500]}"
            fields = {"prompt": "login", "login": login, "password": "any password"}
            answer = browser.post(urljoin(url, form.group(1)), data=fields)
        raise AssertionError("the provider never sent the browser back")
