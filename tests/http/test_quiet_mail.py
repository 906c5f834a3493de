"""Mail steps that do not tell addresses apart by their time (services/quiet_steps.py).

The recipients link's email step and "forgot password" answer the same for any address; the
request path must also DO the same for any address (no code, token or mail for some only), so
its time says nothing: the decision and the mail run after the answer. Call sequences are
compared (a recording wrapper around the Context's repositories and mailer), never wall time."""
from __future__ import annotations

import json
import re
import threading

import pytest

from chalicelib.ports.mail import OutgoingMail
from tests.dashboard_client import DashboardClient, outbox_messages
from tests.helpers import publish

BOTH = pytest.mark.parametrize("storage", ["sqlite", "aws"], indirect=True)
AUDIENCE = ["lead@auditors.example", "@client.example"]


class Recording:
    """Forwards to `inner` and notes `<name>.<method>` of every call (repositories, the mailer)."""

    def __init__(self, inner, calls: list[str], name: str = ""):
        self._inner, self._calls, self._name = inner, calls, name

    def __getattr__(self, attr):
        value = getattr(self._inner, attr)
        if not self._name:  # the Repositories bundle: each repository recorded under its name
            return value if value is None else Recording(value, self._calls, attr)
        if not callable(value):
            return value

        def called(*args, **kwargs):
            self._calls.append(f"{self._name}.{attr}")
            return value(*args, **kwargs)

        return called


class Mailbox:
    def __init__(self):
        self.sent: list[OutgoingMail] = []

    def send(self, message: OutgoingMail) -> None:
        self.sent.append(message)


def _recorded(ctx, mailbox: Mailbox) -> tuple[list[str], list[dict]]:
    """(the calls the request path makes, the steps it hands off) on `ctx` from now on."""
    calls: list[str] = []
    handed: list[dict] = []
    ctx.repos = Recording(ctx.repos, calls)
    ctx.mail_factory = lambda: Recording(mailbox, calls, "mail")
    ctx.__dict__.pop("mail", None)
    ctx.run_quiet = handed.append
    return calls, handed


@pytest.fixture
def link(client, key, app_clock) -> str:
    return publish(client, key, title="Audit pack", share_access="recipients",
                   share_recipients=AUDIENCE)["share_url"].rsplit("/d/", 1)[1]


def _no_secret(step: dict) -> None:
    assert set(step) <= {"kind", "step", "share_id", "email"}, step
    assert not re.search(r"\b[0-9]{6}\b", json.dumps(step)), step  # no code


@BOTH
def test_the_email_step_does_the_same_work_for_an_admitted_address_and_a_stranger(link, clock):
    """Failed on the old code: the admitted address's request also called recipients.put_code,
    workspaces.get and mail.send (a code written and mailed before the answer)."""
    from chalicelib.services.recipients import RecipientService
    from chalicelib.wiring import new_context

    seen = {}
    mailbox = Mailbox()
    for email in ("anyone@client.example", "stranger@else.example"):
        ctx = new_context(clock=clock)
        calls, handed = _recorded(ctx, mailbox)
        assert RecipientService(ctx).request_code(link, email, "203.0.113.9") == email
        seen[email] = (calls, handed)
    (admitted, admitted_steps), (stranger, stranger_steps) = seen.values()
    assert admitted == stranger and not any(c.startswith(("mail.", "recipients.")) for c in admitted), admitted
    assert mailbox.sent == []  # nothing mailed before the answer
    assert [set(s) for s in admitted_steps] == [set(s) for s in stranger_steps] == [
        {"kind", "step", "share_id", "email"}]
    for step in admitted_steps + stranger_steps:
        _no_secret(step)
    # The steps, run after the answer: a code to the admitted address only.
    from chalicelib.wiring import run_quiet_step

    for step in admitted_steps + stranger_steps:
        run_quiet_step(new_context(clock=clock, mail_factory=lambda: mailbox), step)
    assert [m.to for m in mailbox.sent] == ["anyone@client.example"] and mailbox.sent[0].kind == "recipient_code"


@BOTH
def test_forgot_password_does_the_same_work_for_an_account_and_an_unknown_address(owner, clock, fast_argon2):
    """Failed on the old code: the account's request also called rates (its quiet per-account
    limit), people.put_token and mail.send; the unknown address slept instead."""
    from chalicelib.services.accounts import AccountService
    from chalicelib.wiring import new_context

    seen = {}
    mailbox = Mailbox()
    slept: list[float] = []
    for email in ("owner@example.com", "nobody@example.com"):
        ctx = new_context(clock=clock, sleep=slept.append)
        calls, handed = _recorded(ctx, mailbox)
        assert AccountService(ctx).forgot_password(email, "203.0.113.9") == email
        seen[email] = (calls, handed)
    (known, known_steps), (unknown, unknown_steps) = seen.values()
    assert known == unknown and not any(c.startswith(("mail.", "people.", "users.")) for c in known), known
    assert mailbox.sent == [] and slept == []
    assert known_steps == [{"kind": "quiet-mail", "step": "reset", "email": "owner@example.com"}]
    assert unknown_steps == [{"kind": "quiet-mail", "step": "reset", "email": "nobody@example.com"}]
    from chalicelib.wiring import run_quiet_step

    for step in known_steps + unknown_steps:
        run_quiet_step(new_context(clock=clock, mail_factory=lambda: mailbox), step)
    assert [(m.to, m.kind) for m in mailbox.sent] == [("owner@example.com", "reset")]
    assert "/dashboard/reset?token=" in mailbox.sent[0].text


@BOTH
def test_sign_up_does_the_same_work_for_a_new_address_and_an_account(owner, clock, fast_argon2):
    """One argon2 hash and one conditional write (claiming the email: made, or refused as taken)
    for either; the workspace and the "verify" or "exists" mail come after the answer. Failed on
    the old code: the new address's request also called workspaces.*, people.add_member,
    people.put_token and mail.send; the account's, users.get, rates (its quiet limit) and mail.send."""
    from chalicelib.services.accounts import AccountService
    from chalicelib.wiring import new_context

    seen = {}
    mailbox = Mailbox()
    for email in ("owner@example.com", "newcomer@example.com"):
        ctx = new_context(clock=clock)
        calls, handed = _recorded(ctx, mailbox)
        assert AccountService(ctx).sign_up(email, "correct horse battery", "Mine", "203.0.113.9") == email
        seen[email] = (calls, handed)
    (known, known_steps), (new, new_steps) = seen.values()
    assert known == new and not any(c.startswith(("mail.", "people.", "workspaces.")) for c in new), new
    assert mailbox.sent == []
    for step in known_steps + new_steps:
        assert set(step) == {"kind", "step", "email", "workspace_id", "workspace_name"}, step
        assert "argon2" not in json.dumps(step) and "horse" not in json.dumps(step)  # no password, no hash
    from chalicelib.wiring import run_quiet_step

    for step in known_steps + new_steps:
        run_quiet_step(new_context(clock=clock, mail_factory=lambda: mailbox), step)
    assert [(m.to, m.kind) for m in mailbox.sent] == [("owner@example.com", "exists"),
                                                        ("newcomer@example.com", "verify")]
    ctx = new_context(clock=clock)
    made = ctx.users.get("newcomer@example.com")
    assert made is not None and made.email_verified_ms is None
    assert ctx.workspaces.get(made.workspace_id).name == "Mine"
    assert ctx.users.get("owner@example.com").password_hash != made.password_hash  # the owner's kept


def test_the_code_is_mailed_after_the_answer_by_a_thread_of_the_process(link, clock):
    """Locally the step is a daemon thread on the request's Context: the answer does not wait
    for the mail. Failed on the old code: the mail was sent inside request_code."""
    from chalicelib import wiring
    from chalicelib.services.recipients import RecipientService

    gate = threading.Event()
    sent_while_open = []

    class Gated(Mailbox):
        def send(self, message):
            sent_while_open.append(gate.wait(2))  # the old code blocks the answer here
            super().send(message)

    mailbox = Gated()
    ctx = wiring.new_context(clock=clock, mail_factory=lambda: mailbox)
    assert RecipientService(ctx).request_code(link, "lead@auditors.example", "203.0.113.9")
    assert sent_while_open == []  # nothing sent while the answer was made
    gate.set()  # the answer is back: now the mail may leave
    wiring.settle_quiet_steps()
    assert sent_while_open == [True] and mailbox.sent[0].to == "lead@auditors.example"


def test_the_code_and_the_reset_link_reach_the_outbox(client, link, owner, fast_argon2):
    """Through the app (the process's Context: a thread per step), both mails arrive."""
    viewer = DashboardClient(client)
    assert viewer.post(f"/d/{link}/recipient/email", {"email": "lead@auditors.example"}).status == 200
    assert DashboardClient(client).submit("/dashboard/forgot", "/dashboard/forgot",
                                          {"email": "owner@example.com"}).status == 200
    kinds = {(m["to"], m["kind"]) for m in outbox_messages()}
    assert {("lead@auditors.example", "recipient_code"), ("owner@example.com", "reset")} <= kinds


def test_a_refused_hand_off_is_503_for_any_address(client, link, owner, fast_argon2):
    """Failed on the old code: 200 for every address (and a mail to the admitted one)."""
    from chalicelib import wiring

    def refused(step):
        raise ConnectionError("queue unreachable")

    wiring.default_context().run_quiet = refused
    before = len(outbox_messages())
    answers = {}
    for email in ("lead@auditors.example", "stranger@else.example"):
        page = DashboardClient(client).post(f"/d/{link}/recipient/email", {"email": email})
        answers[email] = (page.status, page.text.replace(email, "EMAIL"))
    assert [status for status, _ in answers.values()] == [503, 503]
    assert len(set(answers.values())) == 1
    forgot = {}
    for email in ("owner@example.com", "nobody@example.com"):
        page = DashboardClient(client).submit("/dashboard/forgot", "/dashboard/forgot", {"email": email})
        forgot[email] = (page.status, re.sub(r'name="csrf_token" value="[^"]+"', "", page.text.replace(email, "EMAIL")))
    assert [status for status, _ in forgot.values()] == [503, 503]
    assert len(set(forgot.values())) == 1
    signed_up = {}
    for email in ("owner@example.com", "newcomer@example.com"):
        page = DashboardClient(client).submit("/dashboard/sign-up", "/dashboard/sign-up", {
            "email": email, "password": "correct horse battery", "workspace_name": "Mine"})
        signed_up[email] = (page.status, re.sub(r'name="csrf_token" value="[^"]+"', "",
                                                page.text.replace(email, "EMAIL")))
    assert [status for status, _ in signed_up.values()] == [503, 503]
    assert len(set(signed_up.values())) == 1
    assert len(outbox_messages()) == before  # nothing mailed


@pytest.mark.aws
def test_deployed_the_step_is_a_queue_message_the_worker_runs(link, clock, monkeypatch):
    """The message names the step, the link and the address, no code; the worker's handler
    makes the code, stores it and mails it."""
    from chalicelib import wiring
    from chalicelib.adapters.aws import clients as aws
    from chalicelib.entrypoints import worker
    from chalicelib.services.recipients import RecipientService

    queue = aws.sqs().create_queue(QueueName="webhooks")["QueueUrl"]
    monkeypatch.setenv("DOCPUB_WEBHOOK_QUEUE_URL", queue)
    mailbox = Mailbox()
    ctx = wiring.new_context(clock=clock, mail_factory=lambda: mailbox)
    RecipientService(ctx).request_code(link, "Lead@Auditors.example", "203.0.113.9")
    RecipientService(ctx).request_code(link, "stranger@else.example", "203.0.113.9")
    messages = aws.sqs().receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    bodies = [json.loads(m["Body"]) for m in messages]
    assert sorted(bodies, key=lambda b: b["email"]) == [
        {"kind": "quiet-mail", "step": "recipient-code", "share_id": link, "email": "lead@auditors.example"},
        {"kind": "quiet-mail", "step": "recipient-code", "share_id": link, "email": "stranger@else.example"}]
    assert mailbox.sent == []
    monkeypatch.setattr(wiring, "default_context", lambda: ctx)
    monkeypatch.setattr(wiring, "webhooks", lambda: type("Idle", (), {"run_once": lambda self: (0, 0)})())
    worker.handle({"Records": [{"body": m["Body"]} for m in messages]}, None)
    assert [m.to for m in mailbox.sent] == ["lead@auditors.example"]
    code = mailbox.sent[0].subject.split(" ", 1)[0]
    assert RecipientService(ctx).verify_code(link, "lead@auditors.example", code).cookie_value


@pytest.mark.aws
def test_deployed_reset_and_sign_up_are_queue_messages_the_worker_runs(owner, clock, fast_argon2, monkeypatch):
    from chalicelib import wiring
    from chalicelib.adapters.aws import clients as aws
    from chalicelib.entrypoints import worker
    from chalicelib.services.accounts import AccountService

    queue = aws.sqs().create_queue(QueueName="webhooks")["QueueUrl"]
    monkeypatch.setenv("DOCPUB_WEBHOOK_QUEUE_URL", queue)
    mailbox = Mailbox()
    ctx = wiring.new_context(clock=clock, mail_factory=lambda: mailbox)
    accounts = AccountService(ctx)
    accounts.forgot_password("owner@example.com", "203.0.113.9")
    accounts.sign_up("newcomer@example.com", "correct horse battery", "Mine", "203.0.113.9")
    messages = aws.sqs().receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    bodies = [json.loads(m["Body"]) for m in messages]
    assert sorted(b["step"] for b in bodies) == ["reset", "sign-up"] and mailbox.sent == []
    assert "argon2" not in json.dumps(bodies) and "token" not in json.dumps(bodies)
    monkeypatch.setattr(wiring, "default_context", lambda: ctx)
    monkeypatch.setattr(wiring, "webhooks", lambda: type("Idle", (), {"run_once": lambda self: (0, 0)})())
    worker.handle({"Records": [{"body": m["Body"]} for m in messages]}, None)
    assert sorted((m.to, m.kind) for m in mailbox.sent) == [("newcomer@example.com", "verify"),
                                                            ("owner@example.com", "reset")]


def test_a_failed_step_is_logged_by_its_name_never_the_address(link, clock):
    """The mail service refuses: the step is logged (its name and the error's code) and the
    address, the code and the token appear in no log line."""
    import logging

    from chalicelib.logs import JsonFormatter
    from chalicelib.ports.mail import MailUndeliverable
    from chalicelib.services.recipients import RecipientService
    from chalicelib.wiring import new_context, run_quiet_step

    class Down(Mailbox):
        def send(self, message):
            raise MailUndeliverable("relay down")

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("docpub")
    logger.addHandler(handler)
    try:
        ctx = new_context(clock=clock, mail_factory=Down)
        ctx.run_quiet = lambda step: run_quiet_step(ctx, step)  # at once, in this thread
        assert RecipientService(ctx).request_code(link, "lead@auditors.example", "203.0.113.9")
    finally:
        logger.removeHandler(handler)
    failed = [r for r in records if r.getMessage() == "quiet step failed"]
    assert [(r.step, r.reason) for r in failed] == [("recipient-code", "service_unavailable")]  # type: ignore[attr-defined]
    logged = "\n".join(JsonFormatter().format(r) for r in records)
    assert "lead@auditors.example" not in logged and "auditors" not in logged
