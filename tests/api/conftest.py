"""API personas: tokens of Acme with each scope, a token of Globex (the other tenant), and Alice's memory."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from memory.models import HeatSample, KnowledgeEntry, Page, ProfileVersion, Segment
from memory.models.tiers import HeatEvent, KnowledgeKind, Tier
from memory.services.api_tokens import api_token_create
from memory.services.audit import Actor
from memory.services.gdpr import user_erase
from memory.services.gdpr_export import export_build, export_request
from memory.services.promotion import text_hash
from memory.services.tenancy import end_user_create
from memory.services.turns import space_get_or_create, turn_record

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
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
def memory(alice, assistant, embedder) -> Memory:
    """Alice's memory, built with the real turn service and the engine's models (as updating would leave them)."""
    space = space_get_or_create(end_user=alice, assistant=assistant)
    turn_record(
        end_user=alice,
        assistant=assistant,
        user_message="I adopted a beagle called Biscuit last spring.",
        assistant_reply="Biscuit is a lovely name for a beagle!",
        at=T0,
    )
    later = turn_record(
        end_user=alice,
        assistant=assistant,
        user_message="Any tips for rainy walks?",
        assistant_reply="A raincoat.",
        at=T0 + timedelta(minutes=5),
    )
    segment = Segment.objects.create(
        space=space,
        summary="Alice's beagle Biscuit",
        keywords=["beagle", "biscuit", "dog"],
        embedding=embedder.embed(["Alice's beagle Biscuit dog"])[0],
        l_interaction=1,
        last_touched_at=T0,
    )
    mtm_page = Page.objects.get(space=space, seq=1)
    Page.objects.filter(pk=mtm_page.pk).update(
        tier=Tier.MID_TERM, segment=segment, embedding=embedder.embed([mtm_page.text])[0]
    )
    HeatSample.objects.create(
        segment=segment,
        space=space,
        at=T0,
        n_visit=0,
        l_interaction=1,
        r_recency=1.0,
        heat=2.0,
        event=HeatEvent.CREATED,
    )
    fact = "Alice has a beagle called Biscuit."
    knowledge = KnowledgeEntry.objects.create(
        end_user=alice,
        kind=KnowledgeKind.USER,
        text=fact,
        text_hash=text_hash(fact),
        embedding=embedder.embed([fact])[0],
        source_segment=segment,
    )
    knowledge.source_pages.add(mtm_page)
    profile = ProfileVersion.objects.create(end_user=alice, number=1, text="Alice owns a beagle.")
    mtm_page.refresh_from_db()
    return Memory(stm_page=later.page, mtm_page=mtm_page, segment=segment, knowledge=knowledge, profile=profile)


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
    return {
        "user": "alice",
        "assistant": "ava",
        "page": memory.mtm_page.pk,
        "segment": memory.segment.pk,
        "knowledge": memory.knowledge.pk,
        "profile": memory.profile.pk,
        "receipt": receipt.pk,
        "export": job.pk,
    }
