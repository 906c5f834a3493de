"""The mail port's adapters: outbox files, SMTP (STARTTLS, implicit TLS, AUTH) on a
real SMTP server (aiosmtpd), SES v2 on moto; and `make admin ARGS=outbox`."""
from __future__ import annotations

import datetime
import email
import email.policy
import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from chalicelib.adapters.mail import build_mailer
from chalicelib.adapters.mail.outbox import OutboxMailer, read_outbox
from chalicelib.adapters.mail.smtp import SmtpMailer
from chalicelib.ports.mail import MailUndeliverable, OutgoingMail
from chalicelib.ports.records import Workspace
from chalicelib.services import mailing

ROOT = Path(__file__).resolve().parents[2]


def message(to="ada@example.com", link="http://127.0.0.1:8000/dashboard/verify?token=abc") -> OutgoingMail:
    return mailing.render("verify", to, link=link, hours=24)


def test_outbox_writes_one_rfc5322_file_per_message_with_text_and_html(tmp_path):
    OutboxMailer(tmp_path, "Docpub <no-reply@example.org>").send(message())
    files = list(tmp_path.glob("*.eml"))
    assert len(files) == 1 and not list(tmp_path.glob(".*.tmp"))
    parsed = email.message_from_bytes(files[0].read_bytes(), policy=email.policy.default)
    assert parsed["To"] == "ada@example.com" and parsed["From"] == "Docpub <no-reply@example.org>"
    assert parsed["X-Docpub-Kind"] == "verify" and parsed["Message-ID"]
    text = parsed.get_body(preferencelist=("plain",)).get_content()
    html = parsed.get_body(preferencelist=("html",)).get_content()
    assert "http://127.0.0.1:8000/dashboard/verify?token=abc" in text
    assert 'href="http://127.0.0.1:8000/dashboard/verify?token=abc"' in html


def test_html_part_escapes_what_it_shows(tmp_path):
    sent = mailing.render("invite", "x@example.com", link="http://h/i?t=1", inviter="<b>Eve</b>",
                          workspace_name="A & <B>", role="editor", role_article="an", days=7)
    assert "&lt;b&gt;Eve&lt;/b&gt;" in sent.html and "<b>Eve</b>" not in sent.html
    assert "A &amp; &lt;B&gt;" in sent.html and 'A & <B>' in sent.text


def test_branding_appears_on_a_pro_workspaces_messages():
    branded = mailing.render("invite", "x@example.com", mailing.branding_of(
        Workspace("ws_1", "Acme", "pro", 1, brand_name="Acme Docs", brand_tagline="Reports")),
        link="http://h/i", inviter="a", workspace_name="Acme", role="viewer", role_article="a", days=7)
    plain = mailing.render("invite", "x@example.com", mailing.branding_of(
        Workspace("ws_1", "Acme", "free", 1, brand_name="Acme Docs")),
        link="http://h/i", inviter="a", workspace_name="Acme", role="viewer", role_article="a", days=7)
    assert "Acme Docs · Reports" in branded.html and "Acme Docs" not in plain.html


def test_outbox_listing_is_newest_first_with_links(tmp_path):
    mailer = OutboxMailer(tmp_path, "d@example.org")
    mailer.send(message(to="first@example.com", link="http://h/one"))
    mailer.send(message(to="second@example.com", link="http://h/two"))
    listed = read_outbox(tmp_path, limit=10)
    assert [m["to"] for m in listed] == ["second@example.com", "first@example.com"]
    assert listed[0]["links"] == ["http://h/two"] and listed[0]["kind"] == "verify"
    assert len(read_outbox(tmp_path, limit=1)) == 1


def test_unwritable_outbox_is_undeliverable(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(MailUndeliverable):
        OutboxMailer(blocker / "outbox", "d@example.org").send(message())


def test_admin_outbox_prints_one_json_line(tmp_path):
    OutboxMailer(tmp_path / "outbox", "d@example.org").send(message(link="http://h/verify?token=zz"))
    env = {**os.environ, "DOCPUB_DATA_DIR": str(tmp_path), "DOCPUB_STORAGE": "sqlite"}
    result = subprocess.run([sys.executable, "-m", "scripts.admin", "outbox"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    answer = json.loads(lines[0])
    assert answer["messages"][0]["links"] == ["http://h/verify?token=zz"]


def test_build_mailer_reads_the_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCPUB_DATA_DIR", str(tmp_path))
    assert isinstance(build_mailer("outbox"), OutboxMailer)
    assert isinstance(build_mailer("smtps://u:p@mail.example.com"), SmtpMailer)
    with pytest.raises(ValueError):
        build_mailer("sendmail")
    smtp = build_mailer("smtp://user:s3cret@mail.example.com")
    assert "s3cret" not in repr(smtp) and smtp.port == 587


def test_plain_smtp_is_refused_off_loopback():
    with pytest.raises(ValueError):
        SmtpMailer("smtp://mail.example.com?tls=none", "d@example.org")
    with pytest.raises(ValueError):
        SmtpMailer("smtps://127.0.0.1?tls=none", "d@example.org")


# ---------------------------------------------------------------- SMTP on a real server

@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder = tmp_path_factory.mktemp("tls")
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                       serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    return folder


class Inbox:
    def __init__(self):
        self.messages: list[tuple[str, list[str], bytes]] = []
        self.logins: list[str] = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 OK"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _server(certificate, implicit_tls: bool, starttls: bool, inbox: Inbox):
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificate / "cert.pem", certificate / "key.pem")

    def authenticator(server, session, envelope, mechanism, data):
        ok = data.login == b"mailer" and data.password == b"pa ss"
        if ok:
            inbox.logins.append(data.login.decode())
        return AuthResult(success=ok)

    kwargs = dict(hostname="127.0.0.1", port=_free_port(), authenticator=authenticator, auth_require_tls=True)
    if implicit_tls:
        # aiosmtpd only counts STARTTLS as TLS for AUTH; this transport is TLS from the first byte.
        controller = Controller(inbox, ssl_context=context, **{**kwargs, "auth_require_tls": False})
    elif starttls:
        controller = Controller(inbox, tls_context=context, require_starttls=True, **kwargs)
    else:
        controller = Controller(inbox, hostname="127.0.0.1", port=_free_port())
    controller.start()
    return controller


@pytest.mark.parametrize("scheme", ["smtp", "smtps"])
def test_smtp_sends_over_tls_with_login(certificate, scheme):
    inbox = Inbox()
    controller = _server(certificate, implicit_tls=scheme == "smtps", starttls=True, inbox=inbox)
    try:
        port = controller.port
        url = f"{scheme}://mailer:pa%20ss@127.0.0.1:{port}?ca_file={certificate / 'cert.pem'}"
        SmtpMailer(url, "Docpub <no-reply@example.org>").send(message(to="bob@example.com"))
    finally:
        controller.stop()
    assert inbox.logins == ["mailer"]
    [(sender, recipients, content)] = inbox.messages
    assert sender == "no-reply@example.org" and recipients == ["bob@example.com"]
    assert b"Confirm your email address" in content


def test_smtp_without_starttls_offered_is_refused_not_sent_in_plain_text(certificate):
    inbox = Inbox()
    controller = _server(certificate, implicit_tls=False, starttls=False, inbox=inbox)
    try:
        port = controller.port
        with pytest.raises(MailUndeliverable, match="STARTTLS"):
            SmtpMailer(f"smtp://mailer:x@127.0.0.1:{port}", "d@example.org").send(message())
        # A loopback catcher may be used in plain text when asked for explicitly.
        SmtpMailer(f"smtp://127.0.0.1:{port}?tls=none", "d@example.org").send(message())
    finally:
        controller.stop()
    assert len(inbox.messages) == 1


def test_smtp_with_an_untrusted_certificate_is_refused(certificate):
    inbox = Inbox()
    controller = _server(certificate, implicit_tls=True, starttls=True, inbox=inbox)
    try:
        port = controller.port
        with pytest.raises(MailUndeliverable):
            SmtpMailer(f"smtps://127.0.0.1:{port}", "d@example.org").send(message())
    finally:
        controller.stop()
    assert inbox.messages == []


def test_unreachable_smtp_server_is_undeliverable():
    port = _free_port()
    with pytest.raises(MailUndeliverable):
        SmtpMailer(f"smtp://127.0.0.1:{port}?tls=none", "d@example.org").send(message())


# ---------------------------------------------------------------- SES v2 (moto)

@pytest.mark.aws
def test_ses_sends_the_raw_message(aws, monkeypatch):
    from chalicelib.adapters.aws import clients
    from chalicelib.adapters.aws.mail import SesMailer

    clients.reset_clients()
    clients.ses().create_email_identity(EmailIdentity="example.org")
    SesMailer("Docpub <no-reply@example.org>").send(message(to="carol@example.com"))
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ses.models import ses_backends

    sent = ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages
    assert len(sent) == 1 and "carol@example.com" in sent[0].destinations


@pytest.mark.aws
def test_ses_refusal_is_undeliverable(aws):
    from chalicelib.adapters.aws import clients
    from chalicelib.adapters.aws.mail import SesMailer

    clients.reset_clients()
    with pytest.raises(MailUndeliverable, match="SES"):
        SesMailer("Docpub <no-reply@unverified.example>").send(message())
