"""Issue 24: failed sign-ins cannot lock the owner out of the dashboard.

Finding: failed sign-ins (anyone's) spent the account-wide budget and then
refused the owner's correct password too (services/accounts.py)."""
from __future__ import annotations

import pytest

from tests.dashboard_client import DashboardClient

# argon2 with cheap parameters (tests/conftest.py fast_argon2): every unlock and sign-in here
# verifies a hash (0.25-0.4 s each with the production ones);
# test_passphrase.py::test_passwords_and_passphrases_hash_with_production_parameters_by_default
# holds the production parameters.
pytestmark = pytest.mark.usefixtures("fast_argon2")


def _from(client, address: str, cookies: dict | None = None) -> DashboardClient:
    dash = DashboardClient(client, headers={"CloudFront-Viewer-Address": f"{address}:443"})
    dash.cookies.update(cookies or {})
    return dash


def test_the_owners_browser_signs_in_while_strangers_exhaust_the_account(client, app_clock, monkeypatch):
    from chalicelib.services import accounts

    monkeypatch.setattr(accounts, "SIGN_IN_PER_ACCOUNT", (12, 900))  # the real cap is 100: keep the test quick
    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    owner = _from(client, "203.0.113.9")
    owner.sign_up()
    device = {"docpub_device": owner.cookies["docpub_device"]}
    assert owner.post("/dashboard/sign-out", {}, csrf=owner.get("/dashboard/documents").csrf()).status == 303
    for i in range(12):
        assert _from(client, f"198.51.100.{i}").sign_in(password=f"guess number {i}").status == 401
    # A new browser is refused (the account-wide limit), the owner's known browser is not.
    assert _from(client, "203.0.113.10").sign_in().status == 429
    known = _from(client, "203.0.113.10", device)
    assert known.sign_in().status == 303


def test_a_stolen_device_cookie_of_another_account_does_not_help(client, monkeypatch):
    from chalicelib.services import accounts

    monkeypatch.setattr(accounts, "SIGN_IN_PER_ACCOUNT", (3, 900))
    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    owner = _from(client, "203.0.113.9")
    owner.sign_up()
    other = _from(client, "203.0.113.20")
    other.sign_up(email="other@example.com")
    for i in range(3):
        assert _from(client, f"198.51.100.{i}").sign_in(password=f"guess {i}").status == 401
    wrong_device = {"docpub_device": other.cookies["docpub_device"]}
    assert _from(client, "203.0.113.21", wrong_device).sign_in().status == 429


def test_a_known_browser_is_still_limited_on_its_own_failures(client, monkeypatch):
    from chalicelib.services.accounts import SIGN_IN_PER_DEVICE

    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    owner = _from(client, "203.0.113.9")
    owner.sign_up()
    device = {"docpub_device": owner.cookies["docpub_device"]}
    thief = _from(client, "198.51.100.1", device)
    for i in range(SIGN_IN_PER_DEVICE.limit):
        assert thief.sign_in(password=f"guess {i}").status == 401
    assert thief.sign_in().status == 429


def test_sign_up_limit_per_address(client, app_clock, monkeypatch):
    """Sign-ups are limited per client address (10 an hour by default), and
    DOCPUB_SIGN_UP_PER_HOUR sets it where many people share one address."""
    monkeypatch.setenv("DOCPUB_TRUST_CLOUDFRONT", "true")
    monkeypatch.setenv("DOCPUB_SIGN_UP_PER_HOUR", "2")

    def sign_up(address: str, n: int):
        return _from(client, address).submit("/dashboard/sign-up", "/dashboard/sign-up", {
            "email": f"person{n}@example.com", "password": "correct horse battery", "workspace_name": f"W{n}"})

    assert [sign_up("203.0.113.20", n).status for n in range(3)] == [200, 200, 429]
    assert sign_up("203.0.113.21", 3).status == 200  # another address has its own budget
    app_clock.advance(3600)
    assert sign_up("203.0.113.20", 4).status == 200  # an hour later the first address may again
    monkeypatch.delenv("DOCPUB_SIGN_UP_PER_HOUR")
    assert [sign_up("203.0.113.22", n).status for n in range(10, 21)] == [200] * 10 + [429]
