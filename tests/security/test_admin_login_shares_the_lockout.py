"""Finding 8: /admin/login/ is behind the same lockout as /accounts/login/, and their failures count together."""

from __future__ import annotations

import pytest
from django.contrib.auth import SESSION_KEY, get_user_model

from tests.conftest import PASSWORD

LOCKED = "Too many failed logins for this account or from this address"


@pytest.fixture
def superuser(db):
    return get_user_model().objects.create_superuser(username="root", password=PASSWORD)


def admin_login(client, password: str, address: str = "10.0.0.1"):
    data = {"username": "root", "password": password, "next": "/admin/"}
    return client.post("/admin/login/", data, REMOTE_ADDR=address)


def console_login(client, password: str, address: str = "10.0.0.1"):
    return client.post("/accounts/login/", {"username": "root", "password": password}, REMOTE_ADDR=address)


def test_after_five_wrong_admin_passwords_even_the_right_one_is_refused(client, superuser):
    for _ in range(5):
        admin_login(client, "wrong")
    response = admin_login(client, PASSWORD)
    assert SESSION_KEY not in client.session
    assert LOCKED in response.content.decode()


def test_failures_at_the_admin_count_toward_the_console_login(client, superuser):
    for n in range(3):
        admin_login(client, "wrong", address=f"10.0.0.{n}")
    for n in range(2):
        console_login(client, "wrong", address=f"10.0.1.{n}")
    assert LOCKED in console_login(client, PASSWORD, address="10.9.9.9").content.decode()
    assert LOCKED in admin_login(client, PASSWORD, address="10.9.9.8").content.decode()
    assert SESSION_KEY not in client.session


def test_an_address_that_tries_many_accounts_at_the_admin_is_locked_out(client, superuser, settings):
    settings.LOGIN_FAILURES_PER_ADDRESS = 3
    for name in ("ann", "ben", "cat"):
        client.post("/admin/login/", {"username": name, "password": "wrong"}, REMOTE_ADDR="10.0.0.7")
    assert LOCKED in admin_login(client, PASSWORD, address="10.0.0.7").content.decode()


def test_a_successful_admin_login_clears_the_accounts_failures(client, superuser):
    for _ in range(4):
        admin_login(client, "wrong", address="10.0.0.1")
    admin_login(client, PASSWORD, address="10.0.0.1")
    client.logout()
    for _ in range(4):
        admin_login(client, "wrong", address="10.0.0.2")
    admin_login(client, PASSWORD, address="10.0.0.2")
    assert SESSION_KEY in client.session
