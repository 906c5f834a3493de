"""OAuth for MCP end to end: the official MCP Python client (`mcp.client.auth.OAuthClientProvider`)
against the real local stack, with the consent given in real Chromium by a person who
signed up in the dashboard. Discovery from the 401, dynamic registration (or a client ID
metadata document served by a local https server), PKCE, token exchange, tools,
refresh, then revocation in "Connected apps" makes calls fail."""
from __future__ import annotations

import contextlib
import os
import time
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest

from tests.stack import free_port

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
PASSWORD = "a long oauth password"


class MemoryStorage:
    def __init__(self):
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class Person:
    """A person in Chromium: signs up once, then approves (or not) what clients ask."""

    def __init__(self, page, base_url: str, redirect_uri: str, data_dir=None):
        self.page, self.base, self.redirect_uri = page, base_url, redirect_uri
        self.data_dir = data_dir
        self.callbacks: list[str] = []
        self.consent_text = ""
        self.consent_axe: list[str] = []
        self.approvals = 0
        self.signed_in_first = False

    async def start(self, email: str, sign_out: bool = False):
        async def capture(route):
            self.callbacks.append(route.request.url)
            await route.fulfill(status=200, content_type="text/html", body="<p>You can close this tab.</p>")

        await self.page.route(self.redirect_uri + "*", capture)
        self.page.on("dialog", lambda dialog: asyncio_task(dialog.accept()))
        await self.page.goto(self.base + "/dashboard/sign-up")
        await self.page.fill("input[name=email]", email)
        await self.page.fill("input[name=password]", PASSWORD)
        await self.page.fill("input[name=workspace_name]", "Chat workspace")
        await self.page.click("button[type=submit]")
        await self.page.locator("text=Check your email").wait_for()
        from tests.chromium import mail_link_in  # the confirmation link from the stack's outbox

        await self.page.goto(mail_link_in(self.data_dir, email, "verify"))
        await self.page.click("button[type=submit]")
        await self.page.wait_for_url("**/dashboard/keys**")
        self.email = email
        if sign_out:  # then the authorization starts with the dashboard's sign-in
            await self.page.click("form.signout button")
            await self.page.wait_for_url("**/dashboard/sign-in**")

    async def approve(self, authorization_url: str):
        """The client's redirect handler: the browser opens the URL, the person clicks Allow."""
        await self.page.goto(authorization_url)
        if "/dashboard/sign-in" in self.page.url:
            self.signed_in_first = True
            await self.page.fill("input[name=email]", self.email)
            await self.page.fill("input[name=password]", PASSWORD)
            await self.page.click("button[type=submit]")
        await self.page.wait_for_selector("#allow")
        self.consent_text = await self.page.inner_text("main")
        from tests import axe  # issue 37: the consent page passes axe-core's WCAG 2.1 AA rules too

        if not await self.page.evaluate("typeof window.axe !== 'undefined'"):
            await self.page.evaluate(axe.axe_source())
        self.consent_axe = await self.page.evaluate(axe.RUN, axe.TAGS)
        self.approvals += 1
        await self.page.click("#allow")
        await self.page.wait_for_url(self.redirect_uri + "*")

    async def callback(self):
        from mcp.shared.auth import AuthorizationCodeResult

        got = {k: v[-1] for k, v in parse_qs(urlsplit(self.callbacks[-1]).query).items()}
        return AuthorizationCodeResult(code=got["code"], state=got.get("state"), iss=got.get("iss"))

    async def disconnect_all(self) -> int:
        await self.page.goto(self.base + "/dashboard/apps")
        self.apps_text = await self.page.inner_text("#apps")
        rows = await self.page.locator("#apps button.danger").count()
        for _ in range(rows):
            await self.page.locator("#apps button.danger").first.click()
            await self.page.wait_for_url("**/dashboard/apps?m=disconnected")
        return rows


def asyncio_task(coroutine):
    import asyncio

    return asyncio.ensure_future(coroutine)


@contextlib.asynccontextmanager
async def chromium():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed")
    async_api = pytest.importorskip("playwright.async_api")
    async with async_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            await browser.close()


def oauth_provider(base_url, person, storage, client_metadata_url=None):
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    metadata = OAuthClientMetadata(client_name="Chat app (e2e)", redirect_uris=[person.redirect_uri],
                                   grant_types=["authorization_code", "refresh_token"],
                                   response_types=["code"], token_endpoint_auth_method="none")
    return OAuthClientProvider(server_url=base_url + "/mcp", client_metadata=metadata, storage=storage,
                               redirect_handler=person.approve, callback_handler=person.callback,
                               client_metadata_url=client_metadata_url)


@contextlib.asynccontextmanager
async def mcp_session(base_url, provider):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
        async with Client(streamable_http_client(base_url + "/mcp", http_client=http), cache=None) as client:
            yield client


async def publish_edit_list(client) -> str:
    published = await client.call_tool("publish_document", {"title": "Written in a chat",
                                                            "html": "<h1>Plan</h1><p>draft</p>"})
    assert not published.is_error, published.content[0].text
    doc_id = published.structured_content["document_id"]
    edited = await client.call_tool("edit_document", {"document_id": doc_id,
                                                      "edits": [{"old_string": "draft", "new_string": "final"}]})
    assert not edited.is_error, edited.content[0].text
    assert edited.structured_content["version_number"] == 2
    listed = await client.call_tool("list_documents", {})
    assert not listed.is_error
    assert doc_id in [d["document_id"] for d in listed.structured_content["documents"]]
    return doc_id


def raw_call(base_url: str, access_token: str) -> httpx.Response:
    return httpx.post(base_url + "/mcp", timeout=30,
                      json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                      headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json",
                               "MCP-Protocol-Version": "2025-11-25"})


def run_connector_flow(base_url: str, email: str, client_metadata_url=None, redirect_uri=None,
                       sign_out: bool = False, data_dir=None) -> dict:
    """The whole story; returns what the assertions after it need."""
    redirect_uri = redirect_uri or f"http://127.0.0.1:{free_port()}/callback"
    storage = MemoryStorage()
    seen: dict = {}

    async def main():
        async with chromium() as browser:
            context = await browser.new_context()
            person = Person(await context.new_page(), base_url, redirect_uri, data_dir)
            await person.start(email, sign_out)
            provider = oauth_provider(base_url, person, storage, client_metadata_url)
            async with mcp_session(base_url, provider) as client:
                seen["doc_id"] = await publish_edit_list(client)
                seen["consent"] = person.consent_text
                seen["consent_axe"] = person.consent_axe
                seen["signed_in_first"] = person.signed_in_first
                first = storage.tokens
                assert person.approvals == 1
                # The access token runs out: the client refreshes (rotation) and carries on.
                provider.context.token_expiry_time = time.time() - 1
                info = await client.call_tool("get_workspace_info", {})
                assert not info.is_error, info.content[0].text
                assert info.structured_content["workspace"]["name"] == "Chat workspace"
                assert storage.tokens.access_token != first.access_token
                assert storage.tokens.refresh_token != first.refresh_token
                assert person.approvals == 1  # refreshed, not re-approved
                seen["first"], seen["second"] = first, storage.tokens
            seen["client_id"] = storage.client_info.client_id
            seen["disconnected"] = await person.disconnect_all()
            seen["apps"] = person.apps_text
            # the very next call with the (unexpired) access token fails
            seen["after_disconnect"] = raw_call(base_url, storage.tokens.access_token)
            await context.close()

    anyio.run(main)
    return seen


def test_official_client_with_dynamic_registration(stack):
    seen = run_connector_flow(stack.base_url, "dcr-person@example.com", data_dir=stack.data_dir)
    assert seen["client_id"].startswith("dpc_")  # dynamic client registration
    assert "Chat app (e2e)" in seen["consent"] and "Chat workspace" in seen["consent"]
    assert "docs:write" in seen["consent"]
    assert seen["consent_axe"] == [], seen["consent_axe"]
    assert "Chat app (e2e)" in seen["apps"] and "docs:write" in seen["apps"]
    # revoked in Connected apps: calls fail at once
    assert seen["disconnected"] == 1
    r = seen["after_disconnect"]
    assert r.status_code == 401
    assert 'error="invalid_token"' in r.headers["www-authenticate"]
    assert "resource_metadata=" in r.headers["www-authenticate"]
    # and the refresh token of the revoked grant is refused
    r = httpx.post(stack.base_url + "/oauth/token", timeout=30,
                   data={"grant_type": "refresh_token", "refresh_token": seen["second"].refresh_token,
                         "client_id": seen["client_id"]})
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    log = stack.log_path.read_text(errors="replace")  # secrets never reach the logs
    for secret in (seen["first"].access_token, seen["first"].refresh_token, seen["second"].refresh_token):
        assert secret not in log


# ------------------------------------------------------------------ client ID metadata document

@pytest.fixture(scope="module")
def cimd_server(tmp_path_factory):
    """A local https server for the client's metadata document (self-signed CA)."""
    import http.server
    import json
    import ssl
    import subprocess
    import threading

    folder = tmp_path_factory.mktemp("cimd")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    port = free_port()
    url = f"https://localhost:{port}/oauth/client.json"
    documents: dict = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            body = json.dumps(documents.get(self.path, {})).encode()
            self.send_response(200 if self.path in documents else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(str(cert), str(key))
    server.socket = tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"url": url, "port": port, "ca": str(cert), "documents": documents}
    server.shutdown()


@pytest.fixture(scope="module")
def cimd_stack(tmp_path_factory, cimd_server):
    """A stack allowed to fetch metadata documents from the local test server (and only it)."""
    from tests.stack import LocalStack

    running = LocalStack(tmp_path_factory.mktemp("cimd-stack") / "data", env={
        "DOCPUB_CIMD_ALLOWED_HOSTS": f"localhost:{cimd_server['port']}",
        "DOCPUB_CIMD_CA_FILE": cimd_server["ca"]}).start()
    yield running
    running.stop()


def test_official_client_with_a_client_id_metadata_document(cimd_stack, cimd_server):
    url = cimd_server["url"]
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"  # the one the document lists
    cimd_server["documents"]["/oauth/client.json"] = {
        "client_id": url, "client_name": "Metadata-document app", "token_endpoint_auth_method": "none",
        "redirect_uris": [redirect_uri], "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"]}
    seen = run_connector_flow(cimd_stack.base_url, "cimd-person@example.com", client_metadata_url=url,
                              redirect_uri=redirect_uri, sign_out=True, data_dir=cimd_stack.data_dir)
    assert seen["signed_in_first"]  # signed out: the dashboard asked for sign-in, then showed the consent
    assert seen["client_id"] == url  # no registration: the URL is the client id
    assert "Metadata-document app" in seen["consent"]
    assert seen["disconnected"] == 1 and "Metadata-document app" in seen["apps"]
    assert seen["after_disconnect"].status_code == 401


def test_metadata_documents_on_private_addresses_are_refused(stack):
    """The shared stack has no allowlist: a loopback metadata URL is never fetched."""
    r = httpx.get(stack.base_url + "/oauth/authorize", timeout=30, params={
        "client_id": "https://127.0.0.1:1/client.json", "redirect_uri": "http://127.0.0.1:5/cb",
        "response_type": "code", "code_challenge": "x" * 43, "code_challenge_method": "S256"})
    assert r.status_code == 400
    assert "non-public address" in r.text and "invalid_client" in r.text
