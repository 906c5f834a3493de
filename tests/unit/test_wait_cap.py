"""Issue 33 finding 4: waiting requests have a cap per workspace (contract 4, "Bounds,
second pass"): at most 10 wait at once, the 11th is 429 `rate_limited` with
`Retry-After: 1`, a slot comes back when its wait ends, and a slot whose wait died
lapses on its own. Driven through the service on the injected clock; the waits block
on an event (no sleeping on clocks)."""
from __future__ import annotations

import threading
from contextlib import ExitStack

import pytest

from chalicelib.domain import limits
from chalicelib.errors import RateLimited
from chalicelib.services.auth import credentials_from_key


@pytest.fixture
def who(services):
    _, key = services.workspaces.create_workspace("Waiters", "free")
    return credentials_from_key(key.api_key)


def test_the_eleventh_concurrent_wait_is_refused_at_once(ctx, clock, who):
    """Old code: 1,000 waits of one key all waited (1,003 server threads, health 6.5 s)."""
    from chalicelib.services.feedback import FeedbackService

    feedback = FeedbackService(ctx)
    gate = threading.Event()
    sleeping = threading.Semaphore(0)
    lock = threading.Lock()

    def sleep(seconds: float) -> None:  # a wait's pause: blocks until the test opens the gate
        sleeping.release()
        gate.wait(timeout=10)
        with lock:
            clock.advance(seconds)

    ctx.sleep = sleep
    answers: list[object] = []

    def wait() -> None:
        try:
            answers.append(feedback.list(who, wait=25))
        except Exception as exc:  # noqa: BLE001 - recorded for the assertions
            answers.append(exc)

    waiters = [threading.Thread(target=wait) for _ in range(limits.WAITS_PER_WORKSPACE)]
    for t in waiters:
        t.start()
    for _ in waiters:
        assert sleeping.acquire(timeout=10), "a wait did not start"
    eleventh = threading.Thread(target=wait)
    eleventh.start()
    eleventh.join(timeout=5)
    try:
        assert not eleventh.is_alive(), "the 11th request waited instead of being refused"
        refused = answers.pop()
        assert isinstance(refused, RateLimited), refused
        assert refused.retry_after_seconds == 1 and refused.headers["Retry-After"] == "1"
        assert refused.code == "rate_limited"
    finally:
        gate.set()
        for t in [*waiters, eleventh]:
            t.join(timeout=20)
    assert len(answers) == limits.WAITS_PER_WORKSPACE
    assert all(not isinstance(a, Exception) for a in answers), answers
    # Every slot came back when its wait ended.
    assert ctx.leases.held(f"waits#{_workspace(ctx, who)}", ctx.now_ms()) == []
    ctx.sleep = clock.advance
    assert feedback.list(who, wait=1).feedback == []


def _workspace(ctx, who) -> str:
    return ctx.keys.get(who.key_id).workspace_id


def test_a_wait_that_died_gives_its_slot_back_when_its_lease_lapses(ctx, clock, who):
    """A process killed (or a Lambda timed out) mid-wait never releases: its slot must
    not count forever."""
    from chalicelib.services.feedback import FeedbackService
    from chalicelib.services.waits import wait_slot

    ctx.sleep = clock.advance
    workspace_id = _workspace(ctx, who)
    dead = ExitStack()  # ten waits that never end (never exited: as if their process died)
    for _ in range(limits.WAITS_PER_WORKSPACE):
        dead.enter_context(wait_slot(ctx, workspace_id))
    with pytest.raises(RateLimited):
        FeedbackService(ctx).list(who, wait=5)
    clock.advance(limits.WAIT_LEASE_SECONDS - 1)
    with pytest.raises(RateLimited):
        FeedbackService(ctx).list(who, wait=5)
    clock.advance(1)
    assert FeedbackService(ctx).list(who, wait=5).feedback == []
    dead.close()  # the old holders' releases find nothing to remove


def test_a_list_without_wait_takes_no_slot(ctx, clock, who):
    from chalicelib.services.feedback import FeedbackService
    from chalicelib.services.waits import wait_slot

    ctx.sleep = clock.advance
    with ExitStack() as held:
        for _ in range(limits.WAITS_PER_WORKSPACE):
            held.enter_context(wait_slot(ctx, _workspace(ctx, who)))
        listing = FeedbackService(ctx).list(who)
        assert listing.feedback == []
        assert FeedbackService(ctx).list(who, since=listing.since, wait=0).feedback == []
        # Another workspace's waits are not counted here.
        with pytest.raises(RateLimited):
            FeedbackService(ctx).list(who, wait=1)


def test_a_wait_that_fails_gives_its_slot_back(ctx, clock, who):
    from chalicelib.services.feedback import FeedbackService

    ctx.sleep = clock.advance
    original = ctx.feedback.activity_since

    def broken(*args, **kwargs):
        raise RuntimeError("storage fell over")

    ctx.feedback.activity_since = broken
    try:
        for _ in range(limits.WAITS_PER_WORKSPACE + 1):
            with pytest.raises(RuntimeError):
                FeedbackService(ctx).list(who, wait=5)
    finally:
        ctx.feedback.activity_since = original
    assert ctx.leases.held(f"waits#{_workspace(ctx, who)}", ctx.now_ms()) == []
