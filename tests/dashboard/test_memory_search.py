"""Search of memory: within one user (retrieval's channels plus stem prefixes) and across the tenant's users (full
text), with the match highlighted, who said it, the date, the tier and the user; masked, escaped, audited, bounded."""

from __future__ import annotations

import numpy as np
import pytest

from memory.embeddings import get_embedder, use_embedder
from memory.models import AuditEntry, Page
from memory.selectors.search import search_prefixes
from tests import builders
from tests.dashboard.conftest import HX

URL = "/console/acme/search/"
EMAIL = "alice.private@example.org"


def user_url(end_user) -> str:
    return f"/console/acme/users/{end_user.pk}/"


@pytest.fixture
def allergic(alice, assistant):
    """Alice said she is allergic to peanuts."""
    builders.turn(builders.space_of(alice, assistant), user_message="I am allergic to peanuts.")
    return alice


@pytest.fixture
def address(bob, assistant):
    space = builders.space_of(bob, assistant)
    builders.turn(space, user_message="My address is 12 Elm Street", assistant_reply="Thanks, saved.")
    builders.turn(space, user_message="I like jazz.", assistant_reply="Nice.")
    return bob


def test_allergy_and_allergic_have_different_stems_but_meet_by_prefix(db):
    # PostgreSQL stems them `allergi` and `allerg`; each stem less its last letter is a prefix of the other's
    assert search_prefixes("allergy") == ["allerg"] and search_prefixes("allergic") == ["aller"]
    assert search_prefixes("home address") == ["home", "addres"]
    assert search_prefixes("the of") == []


def test_allergy_finds_allergic_across_users_for_a_supervisor(client, supervisor_user, allergic, address):
    client.force_login(supervisor_user)

    response = client.get(URL, {"q": "allergy"})

    [page] = response.context["found"].page.object_list
    assert page.user_message == "I am allergic to peanuts."
    body = response.content.decode()
    assert "I am <mark>allergic</mark> to peanuts." in body
    assert f'href="/console/acme/users/{allergic.pk}/"' in body and f'href="/console/acme/pages/{page.pk}/"' in body
    assert "User said" in body and "short-term" in body and page.at.strftime("%Y") in body


def test_home_address_finds_the_address_turn(client, agent_user, allergic, address):
    client.force_login(agent_user)

    [page] = client.get(URL, {"q": "home address"}).context["found"].page.object_list

    assert page.user_message == "My address is 12 Elm Street" and page.space.end_user == address


def test_another_tenants_memory_never_appears(client, agent_user, allergic, stranger, other_tenant):
    assistant = other_tenant.assistants.get(external_id="ava")
    builders.turn(builders.space_of(stranger, assistant), user_message="I am allergic to cats.")
    client.force_login(agent_user)

    found = client.get(URL, {"q": "allergic"}).context["found"]

    assert [p.space.end_user for p in found.page.object_list] == [allergic]
    assert not client.get(URL, {"q": "cats"}).context["found"].count


def test_personal_data_is_masked_in_results(client, agent_user, tenant, alice, assistant):
    builders.personal_data_policy(tenant, email="mask_console")
    builders.turn(builders.space_of(alice, assistant), user_message=f"Write to {EMAIL} about the refund.")
    client.force_login(agent_user)

    body = client.get(URL, {"q": "refund"}).content.decode()

    assert EMAIL not in body and "[email]" in body and "<mark>refund</mark>" in body


def test_hostile_markup_in_memory_renders_inert(client, agent_user, alice, assistant):
    builders.turn(
        builders.space_of(alice, assistant),
        user_message="<script>alert('refund')</script> <img src=x onerror=refund()>",
        assistant_reply="<b>refund</b>",
    )
    client.force_login(agent_user)

    body = client.get(URL, {"q": "<script>refund"}).content.decode()

    assert "<script>alert(" not in body and "<img src=x" not in body and "<b>" not in body
    assert "alert(&#x27;<mark>refund</mark>&#x27;)&lt;/<mark>script</mark>&gt;" in body
    assert "&lt;b&gt;<mark>refund</mark>" in body


def test_each_search_is_audited_as_a_read_of_the_users_it_shows(client, agent_user, allergic, address):
    client.force_login(agent_user)

    client.get(URL, {"q": "allergy"})
    client.get(URL, {"q": "zeppelin"})

    reads = AuditEntry.objects.filter(action="memory.read").order_by("seq")
    assert [(r.subject_id, r.detail["what"]) for r in reads] == [
        (allergic.pk, "memory search across users for “allergy”"),
        (None, "memory search across users for “zeppelin”"),
    ]


def test_the_page_renders_whole_and_as_a_fragment(client, agent_user, allergic):
    client.force_login(agent_user)

    page = client.get(URL, {"q": "allergy"}).content.decode()
    fragment = client.get(URL, {"q": "allergy"}, **HX).content.decode()

    assert "<html" in page and 'role="search"' in page and "<mark>allergic</mark>" in page
    assert "<html" not in fragment and 'role="search"' not in fragment
    assert fragment.lstrip().startswith('<div id="results">')
    assert "<mark>allergic</mark>" in fragment


def test_results_are_paginated_and_cost_the_same_for_few_and_many(
    client, agent_user, tenant, assistant, django_assert_num_queries
):
    users = builders.end_users(tenant, count=3)
    client.force_login(agent_user)
    for n, end_user in enumerate(users):
        for i in range(8 * n + 1):
            builders.turn(builders.space_of(end_user, assistant), user_message=f"A refund please, {i}.")
        # 4 auth and access + prefixes + nearest pages + count + rows + the audited reads (lock, last entry, insert)
        with django_assert_num_queries(11):
            found = client.get(URL, {"q": "refunds"}, **HX).context["found"]
        assert found.count == sum(8 * k + 1 for k in range(n + 1))
        assert len(found.page.object_list) == min(found.count, 20)


def test_an_empty_search_reads_nothing(client, agent_user, allergic):
    client.force_login(agent_user)

    response = client.get(URL)

    assert response.status_code == 200 and "Search every user" in response.content.decode()
    assert not AuditEntry.objects.filter(action="memory.read").exists()


# --- Within one user -----------------------------------------------------------------------------------------------


def test_within_a_user_allergy_finds_allergic_highlighted(client, agent_user, allergic):
    client.force_login(agent_user)

    response = client.get(user_url(allergic), {"q": "allergy"})

    assert [p.user_message for p in response.context["found"].pages] == ["I am allergic to peanuts."]
    assert "I am <mark>allergic</mark> to peanuts." in response.content.decode()


def test_within_a_user_home_address_finds_the_address_turn_first(client, agent_user, address):
    client.force_login(agent_user)

    pages = client.get(user_url(address), {"q": "home address"}).context["found"].pages

    assert pages[0].user_message == "My address is 12 Elm Street"


class _SameMeaning:
    """The embedder seam answering one vector for every text: the question means what the stored turn means (a real
    model would say so of "a refund" and "my money back"; the test's hashing embedder cannot)."""

    def __init__(self, vector: np.ndarray) -> None:
        seam = get_embedder()
        self.name, self.dimension, self.vector = seam.name, seam.dimension, vector

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.tile(self.vector, (len(texts), 1))


def test_across_users_a_turn_near_in_meaning_is_found_without_a_shared_word(client, agent_user, bob, assistant):
    space = builders.space_of(bob, assistant)
    kettle = builders.page(space, segment=builders.segment(space, summary="kettle"),
                           user_message="I want my money back for the broken kettle.")  # fmt: skip
    vector = np.zeros(get_embedder().dimension, dtype=np.float32)
    vector[0] = 1.0
    Page.objects.filter(pk=kettle.pk).update(embedding=vector.tolist())
    client.force_login(agent_user)

    with use_embedder(_SameMeaning(vector)):
        found = client.get(URL, {"q": "who asked for a refund"}, **HX).context["found"]

    assert [page.pk for page in found.page.object_list] == [kettle.pk]
