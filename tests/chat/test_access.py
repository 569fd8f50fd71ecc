"""Only end users chat, and an end user only ever sees and touches their own memory (two users, two tenants)."""

from __future__ import annotations

import pytest

from memory.models import KnowledgeEntry, Page, ProfileVersion, Segment
from memory.services.tenancy import assistant_create
from tests import builders

PAGES = ["/chat/ava/", "/chat/ava/memory/"]
ACTIONS = ["/chat/ava/send/", "/chat/ava/memory/pause/", "/chat/ava/memory/export/"]


def memory_of(end_user, assistant) -> dict[str, int]:
    """One item of each kind in someone's memory, by the URL part that names it."""
    space = builders.space_of(end_user, assistant)
    return {
        "turns": builders.page(space, user_message=f"{end_user} secret turn").id,
        "topics": builders.segment_with_pages(
            space, summary=f"{end_user} secret topic", messages=[f"{end_user} secret old turn"]
        ).id,
        "facts": builders.knowledge(end_user, text=f"{end_user} secret fact").id,
        "profile": builders.profile(end_user, text=f"{end_user} secret profile").id,
    }


def item_urls(ids: dict[str, int]) -> list[str]:
    urls = [f"/chat/ava/memory/{kind}/{item_id}/forget/" for kind, item_id in ids.items()]
    return [*urls, f"/chat/ava/memory/facts/{ids['facts']}/correct/"]


def counts() -> tuple[int, ...]:
    return tuple(model.objects.count() for model in (Page, Segment, KnowledgeEntry, ProfileVersion))


@pytest.mark.parametrize("url", [*PAGES, "/chat/"])
def test_anonymous_visitors_are_sent_to_log_in(client, db, url):
    response = client.get(url)

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")


def test_an_operator_opening_the_chat_is_sent_back_to_the_console_with_a_reason(client, agent_user):
    client.force_login(agent_user)

    response = client.get("/chat/", follow=True)

    assert response.redirect_chain[0] == ("/", 302)
    assert "The chat is for end users." in response.content.decode()


@pytest.mark.parametrize("url", PAGES)
def test_an_operator_gets_404_on_chat_pages(client, agent_user, alice, url):
    client.force_login(agent_user)

    assert client.get(url).status_code == 404


@pytest.mark.parametrize("url", ACTIONS)
def test_an_operator_gets_404_on_chat_actions(client, agent_user, url):
    client.force_login(agent_user)

    assert client.post(url, {"message": "hi", "idempotency_key": "k", "paused": "true"}).status_code == 404


def test_an_end_user_cannot_open_an_assistant_of_another_tenant(client, alice, other_tenant):
    assistant_create(tenant=other_tenant, external_id="zed", name="Zed")
    client.force_login(alice.account)

    assert client.get("/chat/zed/").status_code == 404
    assert client.get("/chat/zed/memory/").status_code == 404
    assert client.post("/chat/zed/send/", {"message": "hi", "idempotency_key": "k"}).status_code == 404


def test_an_inactive_assistant_is_not_there(client, alice, tenant):
    retired = assistant_create(tenant=tenant, external_id="old", name="Old")
    retired.is_active = False
    retired.save()
    client.force_login(alice.account)

    assert client.get("/chat/old/").status_code == 404


@pytest.mark.parametrize("owner", ["bob", "stranger"])
def test_an_end_user_cannot_see_anyone_elses_memory(client, alice, bob, stranger, assistant, other_tenant, owner):
    other = {"bob": bob, "stranger": stranger}[owner]
    memory_of(other, assistant if other is bob else other_tenant.assistants.get())
    client.force_login(alice.account)

    for url in PAGES:
        assert f"{other} secret" not in client.get(url).content.decode()


@pytest.mark.parametrize("owner", ["bob", "stranger"])
def test_an_end_user_cannot_change_anyone_elses_memory_by_its_ids(
    client, alice, bob, stranger, assistant, other_tenant, owner
):
    other = {"bob": bob, "stranger": stranger}[owner]
    ids = memory_of(other, assistant if other is bob else other_tenant.assistants.get())
    memory_of(alice, assistant)  # Alice has memory of every kind too: her space exists
    client.force_login(alice.account)
    before = counts()

    for url in item_urls(ids):
        assert client.post(url, {"text": "overwritten"}).status_code == 404, url
        assert client.post(url, {"text": "overwritten"}, HTTP_HX_REQUEST="true").status_code == 404, url

    assert counts() == before
    assert KnowledgeEntry.objects.get(pk=ids["facts"]).text == f"{other} secret fact"


def test_an_end_user_cannot_change_their_notes_with_another_assistant_from_this_one(client, alice, tenant):
    max_assistant = assistant_create(tenant=tenant, external_id="max", name="Max")
    note = builders.knowledge(alice, text="Max promised an invoice template.", assistant=max_assistant)
    client.force_login(alice.account)

    assert client.post(f"/chat/ava/memory/facts/{note.id}/forget/").status_code == 404
    assert "Max promised" not in client.get("/chat/ava/memory/").content.decode()
    assert "Max promised" in client.get("/chat/max/memory/").content.decode()


@pytest.mark.parametrize("url", [u.format(i=1) for u in ("/chat/ava/memory/turns/{i}/forget/", "/chat/ava/memory/")])
def test_pages_and_actions_answer_only_their_method(client, alice, url):
    client.force_login(alice.account)

    method = client.get if url.endswith("forget/") else client.post
    assert method(url).status_code == 405
