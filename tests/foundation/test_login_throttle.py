"""Login throttling: an account, or an address, that fails too often is locked out with a clear message."""

from __future__ import annotations

from django.contrib.auth import SESSION_KEY

from tests.conftest import PASSWORD

LOGIN = "/accounts/login/"
LOCKED = "Too many failed logins for this account or from this address"


def _login(client, username: str, password: str, address: str = "10.0.0.1"):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)


def test_after_five_wrong_passwords_even_the_right_one_is_refused_with_a_clear_message(client, agent_user, settings):
    settings.LOGIN_LOCKOUT_SECONDS = 600
    for _ in range(5):
        assert "enter a correct username and password" in _login(client, agent_user.username, "wrong").content.decode()

    response = _login(client, agent_user.username, PASSWORD)

    assert SESSION_KEY not in client.session
    assert LOCKED in response.content.decode() and "Try again in 10 minutes" in response.content.decode()


def test_the_account_lockout_holds_from_another_address(client, agent_user):
    for n in range(5):
        _login(client, agent_user.username, "wrong", address=f"10.0.0.{n}")

    assert LOCKED in _login(client, agent_user.username, PASSWORD, address="10.9.9.9").content.decode()


def test_an_address_that_tries_many_accounts_is_locked_out(client, agent_user, settings):
    settings.LOGIN_FAILURES_PER_ADDRESS = 3
    for name in ("ann", "ben", "cat"):
        _login(client, name, "wrong")

    assert LOCKED in _login(client, agent_user.username, PASSWORD).content.decode()
    assert _login(client, agent_user.username, PASSWORD, address="10.0.0.2").status_code == 302


def test_a_success_before_the_limit_clears_the_accounts_count(client, agent_user):
    for _ in range(4):
        _login(client, agent_user.username, "wrong", address="10.0.0.7")
    assert _login(client, agent_user.username, PASSWORD, address="10.0.0.8").status_code == 302
    client.logout()

    for _ in range(4):
        _login(client, agent_user.username, "wrong", address="10.0.0.9")

    assert _login(client, agent_user.username, PASSWORD, address="10.0.0.10").status_code == 302
