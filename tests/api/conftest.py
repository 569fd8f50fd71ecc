"""API personas: tokens of Acme with each scope, a token of Globex (the other tenant), and Alice's memory."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone
from rest_framework.test import APIClient

from memory.models import KnowledgeEntry, Page, ProfileVersion, Segment
from memory.services.api_tokens import api_token_create
from memory.services.audit import Actor
from memory.services.data_subject_requests import data_subject_request_open
from memory.services.gdpr import user_erase
from memory.services.gdpr_export import export_build, export_request
from memory.services.import_jobs import memory_import_queue
from memory.services.tenancy import end_user_create
from memory.services.validity import escalation_open
from memory.services.webhook_endpoints import webhook_endpoint_create, webhook_endpoint_test
from tests import builders
from tests.builders import T0
from tests.bundles import bundle_of

ALL_SCOPES = "read,write,govern"


@pytest.fixture(autouse=True)
def exports_in_a_temporary_folder(settings, tmp_path):
    settings.EXPORT_DIR = tmp_path / "exports"


@pytest.fixture(autouse=True)
def fresh_rate_limit_counts(settings):
    """Every test starts with empty throttle counters and a generous limit (the rate-limit tests lower it)."""
    settings.API_RATE_LIMIT = "10000/min"
    cache.clear()
    yield
    cache.clear()


def make_token(tenant, scopes: str = ALL_SCOPES, **options) -> str:
    """The secret of a new token of `tenant`, created through the service, as an admin would."""
    return api_token_create(
        tenant=tenant, name=f"test {scopes}", scopes=scopes, actor=Actor.system("test"), **options
    ).secret


def client_for(secret: str | None) -> APIClient:
    client = APIClient()
    if secret:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.fixture
def token(tenant) -> str:
    """Acme's token with every scope."""
    return make_token(tenant)


@pytest.fixture
def api(token) -> APIClient:
    """A client of Acme with every scope."""
    return client_for(token)


@pytest.fixture
def stranger_api(other_tenant) -> APIClient:
    """A client of Globex with every scope: it must never see Acme's data."""
    return client_for(make_token(other_tenant))


@pytest.fixture
def scoped_api(tenant):
    """A factory: a client of Acme with exactly the given scopes."""
    return lambda scopes: client_for(make_token(tenant, scopes))


@dataclass
class Memory:
    """Alice's memory with Ava: STM pages, one mid-term page in a segment, a fact, a profile."""

    stm_page: Page
    mtm_page: Page
    segment: Segment
    knowledge: KnowledgeEntry
    profile: ProfileVersion


@pytest.fixture
def memory(alice, assistant) -> Memory:
    """Alice's memory: a recorded turn placed in a segment (as updating would leave it) and a later one still in STM."""
    space = builders.space_of(alice, assistant)
    segment = builders.segment(
        space,
        summary="Alice's beagle Biscuit",
        keywords=["beagle", "biscuit", "dog"],
        l_interaction=1,
        last_touched_at=T0,
        heat_sampled=True,
    )
    mtm_page = builders.page(
        space,
        user_message="I adopted a beagle called Biscuit last spring.",
        assistant_reply="Biscuit is a lovely name for a beagle!",
        at=T0,
        segment=segment,
    )
    later = builders.page(
        space, user_message="Any tips for rainy walks?", assistant_reply="A raincoat.", at=T0 + timedelta(minutes=5)
    )
    knowledge = builders.knowledge(
        alice, text="Alice has a beagle called Biscuit.", source_segment=segment, source_pages=[mtm_page]
    )
    profile = builders.profile(alice, text="Alice owns a beagle.")
    return Memory(stm_page=later, mtm_page=mtm_page, segment=segment, knowledge=knowledge, profile=profile)


def error_of(response) -> dict:
    """The `error` object of an error response, after checking the shape every error has."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "fields"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]


@pytest.fixture
def ids(memory, alice, tenant) -> dict:
    """Ids and external ids of one object of each kind in Acme, to address every route with."""
    gone = end_user_create(tenant=tenant, external_id="gone")
    receipt = user_erase(end_user=gone, actor=Actor.system("test"), legal_basis="test", dry_run=False).receipt
    job = export_request(end_user=alice, actor=Actor.system("test"))
    export_build(job_id=job.pk)
    newcomer = end_user_create(tenant=tenant, external_id="newcomer")
    queued = memory_import_queue(end_user=newcomer, bundle=bundle_of(alice), actor=Actor.system("test"))
    dsr = data_subject_request_open(
        tenant=tenant, kind="rectification", external_id="alice", channel="email", requester="Alice",
        received_at=timezone.now(), actor=Actor.system("test"),
    )  # fmt: skip
    flagged = escalation_open(tenant=tenant, item=memory.knowledge, actor=Actor.system("test"), note="Still true?")
    hook = webhook_endpoint_create(
        tenant=tenant, url="https://hooks.example.com/in", event_types=["user.erased"], actor=Actor.system("test")
    ).endpoint
    delivery = webhook_endpoint_test(
        endpoint=hook, actor=Actor.system("test")
    )  # queued after a commit that never comes
    return {
        "user": "alice",
        "assistant": "ava",
        "page": memory.mtm_page.pk,
        "segment": memory.segment.pk,
        "knowledge": memory.knowledge.pk,
        "profile": memory.profile.pk,
        "receipt": receipt.pk,
        "export": job.pk,
        "import": queued.memory_import.pk,
        "escalation": flagged.pk,
        "dsr": dsr.pk,
        "webhook": hook.pk,
        "delivery": delivery.pk,
    }
