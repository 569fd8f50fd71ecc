"""The case view's search, chats and audit tabs: what matched, what each reply used (as links), who did what; each
tab costs a fixed number of queries whatever the size of memory."""

from __future__ import annotations

import pytest

from chat.services import reply_generate
from memory.models import AuditEntry
from tests import builders
from tests.dashboard.conftest import HX

# 4 auth and access + the end user + the spaces + the tabs' counts + 5 for the audited read (savepoint, lock, chain)
# + the legal hold
BASE_QUERIES = 13
TAB_QUERIES = {
    "short-term": 1,
    "mid-term": 2,  # the segments with their heat and page counts, the pending pages
    "long-term": 2,  # the profile versions, the knowledge
    "chats": 6,  # the count, the replies with their pages, the pages, segments, facts and profiles they used
    "audit": 2,  # the count, the entries
}
# the stem prefixes, retrieval's first batch (one round trip), pages, segments, facts, profile versions
SEARCH_QUERIES = 6


def url(end_user) -> str:
    return f"/console/acme/users/{end_user.pk}/"


def ask(end_user, assistant, message: str):
    """A chat reply made as the chat makes it (offline), so it records the memory it used."""
    return reply_generate(end_user=end_user, assistant=assistant, message=message, idempotency_key=message)


@pytest.fixture
def peanut(alice, alice_space):
    """Alice mentioned a peanut allergy in a turn, a fact and her profile."""
    builders.turn(alice_space, user_message="I have a PEANUT allergy, keep that in mind.", assistant_reply="Noted!")
    builders.knowledge(alice, text="The user is allergic to peanuts.")
    builders.profile(alice, text="Alice is allergic to peanuts and loves Lisbon.")
    return alice


def test_a_search_finds_pages_facts_and_profile_versions_that_hold_the_word(client, agent_user, peanut):
    client.force_login(agent_user)

    response = client.get(url(peanut), {"q": "peanut"})

    found = response.context["found"]
    assert response.context["tab"] == "search"
    assert [p.user_message for p in found.pages] == ["I have a PEANUT allergy, keep that in mind."]
    assert [k.text for k in found.knowledge] == ["The user is allergic to peanuts."]
    assert [v.text for v in found.profiles] == ["Alice is allergic to peanuts and loves Lisbon."]
    body = response.content.decode()
    assert "Search results for “peanut”" in body and "3 items" in body


def test_a_search_matches_stems_and_segments_by_summary_or_keyword(client, agent_user, alice, alice_space):
    segment = builders.segment_with_pages(
        alice_space, summary="Hiking in the Alps", keywords=["mountains"], messages=["We hiked up the Matterhorn."]
    )
    client.force_login(agent_user)

    assert [p.segment for p in client.get(url(alice), {"q": "hiking"}).context["found"].pages] == [segment]
    assert client.get(url(alice), {"q": "alps"}).context["found"].segments == [segment]
    assert client.get(url(alice), {"q": "MOUNTAIN"}).context["found"].segments == [segment]


def test_a_search_is_audited_with_what_was_looked_for(client, agent_user, peanut):
    client.force_login(agent_user)

    client.get(url(peanut), {"q": "peanut"}, **HX)

    read = AuditEntry.objects.get(action="memory.read")
    assert read.subject_id == peanut.pk and read.detail == {"what": "user memory: search for “peanut”"}


def test_a_search_with_no_match_says_so(client, agent_user, alice, alice_space):
    client.force_login(agent_user)

    body = client.get(url(alice), {"q": "zeppelin"}, **HX).content.decode()

    assert "Nothing in Alice's memory holds “zeppelin”." in body


def test_markup_in_memory_and_in_the_query_is_escaped(client, agent_user, alice, alice_space):
    builders.turn(alice_space, user_message="<script>alert('peanut')</script>", assistant_reply="<b>ok</b>")
    builders.knowledge(alice, text='<img src=x onerror="peanut()">')
    client.force_login(agent_user)

    body = client.get(url(alice), {"q": "<script>alert('peanut')"}).content.decode()
    body += client.get(url(alice), {"q": "peanut"}).content.decode()

    assert "<script>alert(" not in body and "<img src=x" not in body and "<b>ok</b>" not in body
    assert "&lt;script&gt;alert(" in body and "&lt;img src=x" in body


def test_another_tenants_user_cannot_be_searched(client, agent_user, stranger, stranger_space):
    client.force_login(agent_user)

    assert client.get(url(stranger), {"q": "Lisbon"}).status_code == 404
    assert client.get(url(stranger), {"q": "Lisbon"}, **HX).status_code == 404
    assert not AuditEntry.objects.filter(subject_id=stranger.pk, action="memory.read").exists()


def test_the_search_only_reaches_this_users_memory(client, agent_user, alice, alice_space, bob, assistant):
    builders.turn(builders.space_of(bob, assistant), user_message="I love Lisbon too.")
    client.force_login(agent_user)

    found = client.get(url(alice), {"q": "Lisbon"}).context["found"]

    assert found.pages and {p.space_id for p in found.pages} == {alice_space.pk}


def test_each_chat_reply_links_to_the_pages_segments_and_facts_it_used(client, agent_user, alice, assistant, peanut):
    result = ask(alice, assistant, "Am I allergic to peanuts?")
    client.force_login(agent_user)

    response = client.get(url(alice), {"tab": "chats"})

    [turn] = response.context["turns"].object_list
    assert turn.reply == result.reply and turn.used.count > 0
    used = result.reply.memory_used
    body = response.content.decode()
    for fact in used["user_knowledge"]:
        assert f'href="/console/acme/knowledge/{fact["id"]}/"' in body
    for page in used["pages"]:
        assert f'href="/console/acme/pages/{page["id"]}/"' in body
    for segment in used["segments"]:
        assert f'href="/console/acme/segments/{segment["id"]}/"' in body
    assert "Am I allergic to peanuts?" in body and f'href="/console/acme/pages/{result.reply.page_id}/"' in body


def test_a_reply_whose_memory_was_forgotten_since_counts_it(client, agent_user, alice, assistant, peanut):
    result = ask(alice, assistant, "Am I allergic to peanuts?")
    used = result.reply.memory_used
    result.reply.memory_used = {**used, "user_knowledge": [*used["user_knowledge"], {"id": 999_999, "score": 1}]}
    result.reply.save(update_fields=["memory_used"])
    client.force_login(agent_user)

    [turn] = client.get(url(alice), {"tab": "chats"}).context["turns"].object_list

    assert turn.used.forgotten == 1


def test_the_audit_tab_lists_the_users_entries_for_a_dpo_only(client, dpo_user, agent_user, alice, alice_space):
    builders.turn(alice_space, user_message="Hello again.")
    client.force_login(agent_user)
    assert client.get(url(alice), {"tab": "audit"}).status_code == 403
    assert "audit" not in [key for key, _, _ in client.get(url(alice)).context["tabs"]]

    client.force_login(dpo_user)
    response = client.get(url(alice), {"tab": "audit"})

    entries = response.context["entries"].object_list
    assert entries and {e.subject_id for e in entries} == {alice.pk}
    assert f'href="/console/acme/audit/?user={alice.pk}"' in response.content.decode()


@pytest.mark.parametrize("tab", list(TAB_QUERIES))
def test_each_tab_costs_the_same_for_small_and_large_memory(
    tab, client, dpo_user, alice, bob, assistant, django_capture_on_commit_callbacks, django_assert_max_num_queries
):
    builders.conversations(alice, assistant, capture=django_capture_on_commit_callbacks, rounds=1)
    builders.conversations(bob, assistant, capture=django_capture_on_commit_callbacks, rounds=3)
    for end_user in (alice, bob):
        for n in range(3):
            ask(end_user, assistant, f"Lisbon? {n}")
    client.force_login(dpo_user)

    for end_user in (alice, bob):
        with django_assert_max_num_queries(BASE_QUERIES + TAB_QUERIES[tab]):
            assert client.get(url(end_user), {"tab": tab}, **HX).status_code == 200


def test_a_search_costs_the_same_for_small_and_large_memory(
    client, agent_user, alice, bob, assistant, django_capture_on_commit_callbacks, django_assert_max_num_queries
):
    builders.conversations(alice, assistant, capture=django_capture_on_commit_callbacks, rounds=1)
    builders.conversations(bob, assistant, capture=django_capture_on_commit_callbacks, rounds=3)
    client.force_login(agent_user)

    for end_user in (alice, bob):
        with django_assert_max_num_queries(BASE_QUERIES + SEARCH_QUERIES):
            assert client.get(url(end_user), {"q": "sourdough"}).status_code == 200


def test_a_pages_source_reply_links_to_the_memory_it_used(client, agent_user, alice, assistant, peanut):
    result = ask(alice, assistant, "Am I allergic to peanuts?")
    client.force_login(agent_user)

    body = client.get(f"/console/acme/pages/{result.reply.page_id}/").content.decode()

    facts = result.reply.memory_used["user_knowledge"]
    assert facts and all(f'href="/console/acme/knowledge/{fact["id"]}/"' in body for fact in facts)
