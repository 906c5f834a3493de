"""CloudFront standard log lines (domain/view_logs.py): what counts as a static page's
view beacon, and malformed or truncated lines (skipped, never fatal)."""
from __future__ import annotations

import pytest

from chalicelib.domain import view_logs
from tests.cloudfront_logs import CHROME, beacon, line, realtime, realtime_beacon

SHARE = "AbCdEfGhIjKlMnOpQrStUv"
T = 1_795_000_000_000


def test_a_beacon_line_names_the_link_version_address_and_time():
    found = view_logs.parse(beacon(SHARE, T, 3, ip="2001:db8::7"))
    assert found == view_logs.Beacon(SHARE, 3, "2001:db8::7", CHROME, T // 1000 * 1000)


def test_the_user_agent_is_decoded_even_when_encoded_twice():
    raw = line(f"/d/{SHARE}/seen", T).replace("Mozilla/5.0%20", "Mozilla/5.0%2520")
    assert view_logs.parse(raw).user_agent == CHROME


@pytest.mark.parametrize("kwargs", [{"status": 403}, {"status": 404}, {"method": "POST"}])
def test_a_refused_or_posted_beacon_is_no_view(kwargs):
    assert view_logs.parse(beacon(SHARE, T, **kwargs)) is None


@pytest.mark.parametrize("path", [f"/d/{SHARE}", f"/d/{SHARE}/v/v_abc", f"/d/{SHARE}/view", "/api/v1/me",
                                  f"/d/{SHARE}/seen/x", "/d/short/seen"])
def test_other_requests_are_not_beacons(path):
    assert view_logs.parse(line(path, T)) is None


def test_a_304_from_a_revalidation_counts_and_a_bad_version_is_dropped():
    assert view_logs.parse(beacon(SHARE, T, status=304)).version == 1
    assert view_logs.parse(line(f"/d/{SHARE}/seen", T, query="v=%C2%B2")).version is None
    assert view_logs.parse(line(f"/d/{SHARE}/seen", T, query="v=0")).version is None


@pytest.mark.parametrize("broken", [
    lambda s: s[: len(s) // 2],                          # truncated mid-line
    lambda s: s.replace("\t", " ", 5),                   # not tab-separated
    lambda s: "2026-13-45" + s[10:],                     # not a date
    lambda s: s.replace("\t200\t", "\tabc\t", 1),        # not a status
    lambda s: "",                                        # nothing
])
def test_a_malformed_line_raises_malformed(broken):
    with pytest.raises(view_logs.Malformed):
        view_logs.parse(broken(beacon(SHARE, T)))


def test_the_fields_line_decides_the_order():
    names = list(view_logs.FIELDS)
    names[4], names[5] = names[5], names[4]  # c-ip and cs-method swapped
    values = beacon(SHARE, T).split("\t")
    values[4], values[5] = values[5], values[4]
    assert view_logs.fields_of("#Fields: " + " ".join(names)) == names
    assert view_logs.parse("\t".join(values), names).client_ip == "198.51.100.7"
    assert view_logs.fields_of("#Version: 1.0") is None


# ---------------------------------------------------------------- real-time log records (what is counted deployed)

def test_a_realtime_record_reads_the_same_beacon_with_millisecond_time():
    found = view_logs.parse(realtime_beacon(SHARE, T + 123, 2, ip="2001:db8::7"), view_logs.REALTIME_FIELDS)
    assert found == view_logs.Beacon(SHARE, 2, "2001:db8::7", CHROME, T + 123)
    assert view_logs.parse(realtime(f"/d/{SHARE}", T), view_logs.REALTIME_FIELDS) is None
    assert view_logs.parse(realtime_beacon(SHARE, T, status=403), view_logs.REALTIME_FIELDS) is None


@pytest.mark.parametrize("broken", [
    lambda s: s[: len(s) // 2],                          # truncated mid-record
    lambda s: "1795000000,5" + s[14:],                   # not a timestamp
    lambda s: "-" + s[14:],                              # no timestamp
    lambda s: s.replace("\t200\t", "\t2xx\t", 1),        # not a status
    lambda s: s.replace("\t", " "),                      # not tab-separated
    lambda s: s.split("\t", 1)[1],                       # a field short
])
def test_a_malformed_realtime_record_raises_malformed(broken):
    with pytest.raises(view_logs.Malformed):
        view_logs.parse(broken(realtime_beacon(SHARE, T)), view_logs.REALTIME_FIELDS)


# ---------------------------------------------------------------- AddressCaps: the cap across batches

def test_caps_carry_over_batches_and_a_batch_again_gets_its_first_decisions():
    caps = view_logs.AddressCaps()
    key = ("doc", "198.51.100.1", 7)
    assert caps.admit("b1", [key] * 2, limit=3) == [True, True]
    assert caps.admit("b2", [key] * 2 + [("doc", "198.51.100.2", 7)], limit=3) == [True, False, True]
    assert caps.admit("b2", [key] * 2 + [("doc", "198.51.100.2", 7)], limit=3) == [True, False, True]  # a retry
    assert caps.admit("b1", [key] * 2, limit=3) == [True, True]
    assert caps.count(key) == 3 and caps.admit("b3", [key], limit=3) == [False]


def test_caps_keep_the_newest_window_and_the_one_before_it():
    caps = view_logs.AddressCaps()
    for window in (1, 2, 3):
        assert caps.admit(f"w{window}", [("doc", "a", window)] * 2, limit=2) == [True, True]
    assert caps.count(("doc", "a", 1)) == 0 and caps.count(("doc", "a", 2)) == 2 and len(caps) == 2
    assert caps.admit("late", [("doc", "a", 2)], limit=2) == [False]  # seconds late: still capped


def test_caps_stay_within_their_bound_and_keep_the_capped_addresses():
    caps = view_logs.AddressCaps(max_entries=1_000, max_batches=4)
    reloader = ("doc", "198.51.100.1", 5)
    caps.admit("reloads", [reloader] * 40, limit=30)
    caps.admit("old", [("doc", f"10.0.0.{n}", 4) for n in range(200)], limit=30)  # the window before
    for batch in range(10):  # 5,000 addresses seen once each
        caps.admit(f"b{batch}", [("doc", f"10.{batch}.{n // 256}.{n % 256}", 5) for n in range(500)], limit=30)
        assert len(caps) <= 1_000 and caps.batches() <= 4
    assert caps.count(reloader) == 30  # the smallest counts went first, never the capped address
    assert caps.count(("doc", "10.0.0.1", 4)) == 0  # the older window went before them
    assert caps.admit("more", [reloader], limit=30) == [False]


def test_a_forgotten_batch_would_be_capped_by_its_own_first_attempt():
    """Why decisions are remembered per batch: without them a retry undercounts."""
    caps = view_logs.AddressCaps(max_batches=1)
    key = ("doc", "a", 1)
    assert caps.admit("b1", [key] * 3, limit=3) == [True] * 3
    caps.admit("b2", [], limit=3)  # pushes b1 out
    assert caps.admit("b1", [key] * 3, limit=3) == [False] * 3
