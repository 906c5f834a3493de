"""The API key's write limit over sharded logs (domain/ratelimit.claim_sharded):
still exactly `limit` in any rolling window, whatever shards writers pick."""
from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from chalicelib.domain.ratelimit import ShardLog, claim_sharded, decide, shard_capacity


def run(times: list[int], limit: int, shards: int, seed: int) -> list[bool]:
    """Claim at each time (ms) in order, applying each accepted claim; True where accepted."""
    rng = random.Random(seed)
    logs = {s: ShardLog(s, 0, []) for s in range(shards)}
    accepted = []
    for now in times:
        decision, claim = claim_sharded(list(logs.values()), now, limit, 60, choose=rng.choice)
        accepted.append(claim is not None)
        if claim:
            logs[claim.shard] = ShardLog(claim.shard, claim.expected_seq + 1, claim.new_log)
    return accepted


def test_capacities_sum_to_the_limit():
    for limit in (1, 7, 8, 60, 61, 1000):
        assert sum(shard_capacity(i, 8, limit) for i in range(8)) == limit


def test_the_sixty_first_write_in_a_burst_is_refused_and_the_window_slides():
    accepted = run([1000 + i for i in range(61)] + [61_000, 61_001], limit=60, shards=8, seed=1)
    assert accepted[:60] == [True] * 60 and accepted[60] is False
    assert accepted[61:] == [True, True]  # the first two left the window


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=180_000), min_size=1, max_size=150).map(sorted),
       st.integers(min_value=1, max_value=70), st.sampled_from([1, 3, 8]), st.integers(0, 1000))
def test_sharded_logs_accept_exactly_what_one_log_accepts(times, limit, shards, seed):
    """Same answers as the single sliding log (`decide`), for any times, limit and shard choice."""
    single, log = [], []
    for now in times:
        decision = decide(log, now, limit, 60)
        single.append(decision.allowed)
        if decision.allowed:
            log = decision.new_log
    assert run(times, limit, shards, seed) == single


def test_a_lowered_limit_refuses_until_the_shards_drain():
    logs = [ShardLog(s, 1, [1000 + s]) for s in range(8)]  # 8 writes, one per shard
    decision, claim = claim_sharded(logs, 2000, 4, 60)
    assert claim is None and decision.retry_after is not None


def test_decide_claims_several_slots_all_or_none():
    from chalicelib.domain.ratelimit import decide

    now = 1_000_000
    log = [now - 50_000, now - 40_000, now - 30_000]  # 3 of 5 used in a 60 s window
    taken = decide(log, now, 5, 60, count=2)
    assert taken.allowed and taken.new_log == log + [now, now] and taken.remaining == 0
    refused = decide(log, now, 5, 60, count=3)
    # Room for 3 once the oldest leaves (10 s), not before; nothing claimed meanwhile.
    assert not refused.allowed and refused.retry_after == 10 and refused.new_log == log
    assert decide(log, now, 5, 60, count=4).retry_after == 20
    assert decide([], now, 5, 60, count=6).retry_after == 60  # never: more than the limit
    assert decide(log, now, 5, 60).new_log == decide(log, now, 5, 60, count=1).new_log
