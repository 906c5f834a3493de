"""Quiet steps: the part of a mail step that differs between addresses, run after the answer.

The recipients link's email step (services/recipients.py), "forgot password" and sign-up
(services/accounts.py) answer the same for any address. What differs (is the address
admitted, had it an account, is its per-account quiet limit spent; then a workspace made,
a code or token written and a mail sent) is no longer done while the caller waits: the request path
makes its rate-limit hits, hands the step off (`hand_off`) and answers, so it does the
same work, in the same time, for every address (contract 7d, 7f: no enumeration, by
content or by timing).

A step is a small message, `{"kind": "quiet-mail", "step": <name>, ...}`, naming the
step and its inputs (a link's share id, the address, a new account's workspace id and
name): never a code, a token, a password or its hash; the step makes those itself. `Context.run_quiet` runs it: deployed an
SQS message on the worker's queue (adapters/aws/outbox.send_quiet_step, run by
entrypoints/worker.handle), locally a daemon thread of this process
(wiring.quiet_step_in_thread). Either way wiring.run_quiet_step calls the service method the
step names (`RecipientService.deliver_code`, `AccountService.deliver_reset`,
`AccountService.deliver_sign_up`), which keeps
every rule.

A hand-off that fails (the queue refuses) is a 503 for any address alike.
"""
from __future__ import annotations

import logging
from typing import Callable

from chalicelib.errors import ServiceUnavailable
from chalicelib.services.context import Context

log = logging.getLogger("docpub")

KIND = "quiet-mail"
RECIPIENT_CODE = "recipient-code"
RESET = "reset"
SIGN_UP = "sign-up"
STEPS = (RECIPIENT_CODE, RESET, SIGN_UP)


def hand_off(ctx: Context, step: str, **inputs: str) -> None:
    """Run `step` after the answer; ServiceUnavailable (503) when it cannot be handed off."""
    assert step in STEPS, step
    try:
        ctx.run_quiet({"kind": KIND, "step": step, **inputs})
    except Exception as exc:  # noqa: BLE001 - the same 503 whatever the address and whatever refused
        log.error("quiet step not handed off", extra={"step": step, "reason": type(exc).__name__})
        raise ServiceUnavailable("We could not send the email just now; try again in a minute.") from None


def run(ctx: Context, step: object, deliver: Callable[[Context, dict[str, str]], None]) -> None:
    """Run one quiet step on `ctx` (the worker's handler, or a thread of this process):
    `deliver` (wiring.run_quiet_step: the service method the step names). A failure is logged
    (the step and the error's code: never the address, a code or a token) and not raised: the
    person asks again (retrying a queue batch could mail twice)."""
    from chalicelib.errors import DocpubError

    message = message_of(step)
    if message is None:
        log.error("not a quiet step: ignored")
        return
    try:
        deliver(ctx, message)
    except Exception as exc:  # noqa: BLE001 - logged, never raised: see above
        reason = exc.code if isinstance(exc, DocpubError) else "internal_error"
        log.error("quiet step failed", exc_info=not isinstance(exc, DocpubError),
                  extra={"step": message["step"], "reason": reason})


def message_of(body: object) -> dict[str, str] | None:
    """A quiet step's message, checked (what a queue or a thread hands the worker), or None."""
    if not isinstance(body, dict) or body.get("kind") != KIND or body.get("step") not in STEPS:
        return None
    if not all(isinstance(value, str) for value in body.values()):
        return None
    return body
