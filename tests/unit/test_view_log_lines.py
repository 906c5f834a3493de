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
