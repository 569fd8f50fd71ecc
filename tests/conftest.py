"""Shared personas and seams for every test: two tenants, operators of each role, end users, a stranger."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.core.cache import cache

from memory.embeddings import use_embedder
from memory.models import Role
from memory.retrieval.common_terms import CommonTerms, common_terms_forget, common_terms_set
from memory.retrieval.side_readers import side_readers
from memory.services.tenancy import end_user_create, operator_create, tenant_create
from memoryos_site.celery import app as celery_app
from tests.fakes import HashingEmbedder
from tests.receivers import Receiver

# Workers and servers that tests start as processes use the fake embedder's seam or none: no model to warm up.
os.environ.setdefault("EMBEDDING_WARM_AT_START", "false")

# --- Tiers: `make check` runs `-m "not browser and not process and not slow"`; `make test` runs everything ----------

TESTS = Path(__file__).parent
# Fixtures that start another process (a server, a worker): a test using one is in the `process` tier.
PROCESS_FIXTURES = {"site_url"}


def pytest_collection_modifyitems(config, items):
    """Mark each test's tier from where it lives and what it uses, beside the marks written on tests themselves:
    everything under tests/browser drives Chromium; a real worker, a load run or a fixture that starts a server is
    another process; a load run is slow."""
    for item in items:
        if (TESTS / "browser") in item.path.parents:
            item.add_marker(pytest.mark.browser)
        if (
            item.get_closest_marker("worker")
            or item.get_closest_marker("load")
            or PROCESS_FIXTURES & set(item.fixturenames)
        ):
            item.add_marker(pytest.mark.process)
        if item.get_closest_marker("load"):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def side_readers_closed(django_db_setup):
    """Retrieval's side readers keep their connections to the test database; they are closed before it is dropped."""
    yield
    side_readers.close()


@pytest.fixture(autouse=True)
def no_warm_up(settings):
    """The embedding model is not warmed up at start in tests (the fake embedder stands in for it)."""
    settings.EMBEDDING_WARM_AT_START = False


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """A `replica` alias mirroring `default` (Django's TEST MIRROR): a second connection to the same test database.

    Nothing reads from it unless a test sets DATABASE_REPLICA_URL (memoryos_site.routers), so other tests are
    unchanged; the routing tests declare it in their `databases`.
    """
    from django.conf import settings
    from django.db import connections

    if "replica" not in settings.DATABASES:
        default = settings.DATABASES["default"]
        replica = {**default, "TEST": {**default.get("TEST", {}), "MIRROR": "default"}}
        settings.DATABASES["replica"] = connections.settings["replica"] = replica


@pytest.fixture(autouse=True)
def embedder(request):
    """The fake embedder at the seam, unless a test asks for the real model with @pytest.mark.real_embedder."""
    if request.node.get_closest_marker("real_embedder"):
        yield None
        return
    with use_embedder(HashingEmbedder()) as fake:
        yield fake


@pytest.fixture(autouse=True)
def celery_eager():
    """Tasks run in-process unless a test starts a real worker."""
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = False


@pytest.fixture(autouse=True)
def empty_cache():
    """Counts kept in the cache (login failures, API rate limits) never leak from one test into another."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def no_common_words():
    """No word counts as common (memory.retrieval.common_terms) unless a test says so: the list is kept per process
    and read from the database's statistics at most every ten minutes, which would otherwise make a test's query count
    depend on the tests that ran before it."""
    common_terms_set(CommonTerms())
    yield
    common_terms_forget()


PASSWORD = "a-long-test-password"  # every persona's password


@pytest.fixture(autouse=True)
def static_source_files(settings):
    """Pages link static files by their own names, served by the finders: tests never run collectstatic first."""
    settings.STATIC_COLLECTED = False


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Hashing is deliberately slow; tests log in a lot and check nothing about the hasher."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def placement_per_eviction(settings):
    """Tests see each page that leaves STM placed at once; tests of batched placement raise the batch themselves."""
    settings.MEMORY_PLACEMENT_BATCH = 1


@pytest.fixture
def tenant(db):
    """Acme, with its assistant Ava (external id `ava`)."""
    return tenant_create(slug="acme", name="Acme")


@pytest.fixture
def other_tenant(db):
    return tenant_create(slug="globex", name="Globex")


@pytest.fixture
def assistant(tenant):
    return tenant.assistants.get(external_id="ava")


def _operator(tenant, role: Role):
    return operator_create(username=f"{role.value}-of-{tenant.slug}", password=PASSWORD, tenant=tenant, role=role)


@pytest.fixture
def agent_user(tenant):
    return _operator(tenant, Role.AGENT)


@pytest.fixture
def supervisor_user(tenant):
    return _operator(tenant, Role.SUPERVISOR)


@pytest.fixture
def dpo_user(tenant):
    return _operator(tenant, Role.DPO)


@pytest.fixture
def admin_user(tenant):
    return _operator(tenant, Role.ADMIN)


@pytest.fixture
def alice(tenant):
    """An end user of Acme who logs in as `alice`."""
    return end_user_create(
        tenant=tenant, external_id="alice", display_name="Alice", username="alice", password=PASSWORD
    )


@pytest.fixture
def bob(tenant):
    return end_user_create(tenant=tenant, external_id="bob", display_name="Bob", username="bob", password=PASSWORD)


@pytest.fixture
def stranger(other_tenant):
    """An end user of the other tenant, Globex."""
    return end_user_create(
        tenant=other_tenant, external_id="stranger", display_name="Stranger", username="stranger", password=PASSWORD
    )


@pytest.fixture
def receiver(settings):
    """A webhook receiver listening on 127.0.0.1 (private addresses allowed, as in development)."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    with Receiver() as running:
        yield running
