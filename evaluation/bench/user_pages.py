"""The user pages of the benchmark: the console's user page and the end user's own memory page, rendered for full
users through Django's test client (URL routing, middleware, views, selectors and templates, no network).

The operator and the end users' logins are made for the run and removed afterwards with the tenant.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter

from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from evaluation.scope import settings_changed
from memory.models import EndUser, MemorySpace, Tenant
from memory.roles import Role
from memory.services.tenancy import end_user_create, operator_create

HOST = "bench.invalid"


def _ok(response, url: str) -> None:
    if response.status_code != 200:
        raise RuntimeError(f"GET {url} answered {response.status_code}, not 200: the bench measures rendered pages")


@contextmanager
def page_clients(*, tenant: Tenant, spaces: dict[int, MemorySpace]) -> Iterator[tuple[Client, dict[int, Client]]]:
    """A logged-in console client (an admin of `tenant`) and one logged-in client per end user of `spaces`.

    Their accounts exist for the block only. The test client's host is added to ALLOWED_HOSTS for the block.
    """
    from django.conf import settings

    usernames = [f"bench-admin-{tenant.slug}"]
    with settings_changed(ALLOWED_HOSTS=[*settings.ALLOWED_HOSTS, HOST]):
        try:
            operator = operator_create(username=usernames[0], password=None, tenant=tenant, role=Role.ADMIN)
            console = Client(HTTP_HOST=HOST)
            console.force_login(operator)
            own: dict[int, Client] = {}
            end_users = EndUser.objects.in_bulk([space.end_user_id for space in spaces.values()])
            for space_id, space in spaces.items():
                username = f"bench-{tenant.slug}-{space.end_user_id}"
                usernames.append(username)
                end_user = end_user_create(
                    tenant=tenant, external_id=end_users[space.end_user_id].external_id, username=username
                )
                client = Client(HTTP_HOST=HOST)
                client.force_login(end_user.account)
                own[space_id] = client
            yield console, own
        finally:
            get_user_model().objects.filter(username__in=usernames).delete()


def user_pages_render(
    *, tenant: Tenant, spaces: dict[int, MemorySpace], samples: int, rng: random.Random
) -> dict[str, list[float]]:
    """Milliseconds to GET the console user page, the end user's memory page and its baseline, a plain page of the
    same layout for the same end user (changing their password: a form, no memory); `samples` of each."""
    timings: dict[str, list[float]] = {"console_user_page": [], "end_user_page": [], "end_user_plain_page": []}
    # pages link the source static files, as under the test server: the benchmark needs no collectstatic first
    with settings_changed(STATIC_COLLECTED=False), page_clients(tenant=tenant, spaces=spaces) as (console, own):
        for _ in range(samples):
            space = spaces[rng.choice(list(spaces))]
            for name, client, url in (
                ("console_user_page", console, _console_url(tenant, space)),
                ("end_user_page", own[space.id], reverse("chat:memory", args=[space.assistant.external_id])),
                ("end_user_plain_page", own[space.id], reverse("password_change")),
            ):
                started = perf_counter()
                response = client.get(url)
                timings[name].append((perf_counter() - started) * 1000)
                _ok(response, url)
    return timings


def _console_url(tenant: Tenant, space: MemorySpace) -> str:
    return reverse("console:user", kwargs={"slug": tenant.slug, "end_user_id": space.end_user_id})
