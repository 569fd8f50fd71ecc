"""With phone numbers masked in the console, no screen or API read under an operator's browser session shows one:
pages, the context preview (its prompt text included), search results, what a reply used, REST reads. Only the
audited reveal shows the raw value; API tokens read what is stored."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry
from memory.services.audit import Actor
from memory.services.personal_data import personal_data_policy_update
from tests import builders
from tests.api.conftest import client_for, make_token

PHONE = "020 7946 0958"


@pytest.fixture
def phone_masked(tenant):
    personal_data_policy_update(tenant=tenant, actor=Actor.system("test"), reason="test", phone="mask_console")


@pytest.fixture
def remembered(alice, assistant, phone_masked):
    space = builders.space_of(alice, assistant)
    builders.page(space, user_message=f"Call me on {PHONE} about the trip to Lisbon", assistant_reply="Will do.")
    builders.knowledge(alice, text=f"The user's phone number is {PHONE}.")
    builders.profile(alice, text=f"Alice plans a trip to Lisbon; reachable on {PHONE}.")
    return space


def console_urls(alice, space) -> list[str]:
    page = space.pages.get()
    base = f"/console/acme/users/{alice.pk}"
    return [
        f"{base}/",
        f"{base}/?q=Lisbon",
        f"{base}/preview/?q=When+do+I+go+to+Lisbon",
        f"{base}/profile/",
        f"/console/acme/pages/{page.pk}/",
    ]


@pytest.mark.parametrize("persona", ["agent_user", "supervisor_user", "admin_user"])
def test_no_console_screen_shows_a_masked_value(client, alice, remembered, persona, request):
    client.force_login(request.getfixturevalue(persona))

    for url in console_urls(alice, remembered):
        response = client.get(url)
        body = response.content.decode()
        assert response.status_code == 200, url
        assert PHONE not in body, url

    preview = client.get(f"/console/acme/users/{alice.pk}/preview/", {"q": "When do I go to Lisbon?"})
    assert "[phone]" in preview.content.decode()  # the prompt as the model gets it, masked for the operator
    assert not AuditEntry.objects.filter(action="personal_data.reveal").exists()


def test_a_fragment_for_htmx_is_masked_too(client, agent_user, alice, remembered):
    client.force_login(agent_user)

    response = client.get(f"/console/acme/users/{alice.pk}/preview/", {"q": "Lisbon"}, HTTP_HX_REQUEST="true")

    assert response.status_code == 200 and PHONE not in response.content.decode()


@pytest.mark.parametrize("persona", ["agent_user", "supervisor_user"])
def test_rest_reads_under_an_operators_browser_session_are_masked(client, alice, remembered, persona, request):
    client.force_login(request.getfixturevalue(persona))

    for path in ("/api/v1/pages/", "/api/v1/knowledge/", "/api/v1/users/alice/profile/"):
        response = client.get(path)
        assert response.status_code == 200, (path, response.content)
        assert PHONE not in response.content.decode(), path
        assert "[phone]" in response.content.decode(), path


def test_a_retrieval_under_an_operators_browser_session_is_masked(client, agent_user, alice, remembered):
    client.force_login(agent_user)
    body = {"user": "alice", "assistant": "ava", "query": "phone number Lisbon"}

    response = client.post("/api/v1/retrieve/", body, content_type="application/json")

    assert response.status_code == 200 and PHONE not in response.content.decode()


def test_an_api_token_reads_what_is_stored(tenant, remembered):
    response = client_for(make_token(tenant)).get("/api/v1/pages/")

    assert PHONE in response.content.decode()


def test_the_audited_reveal_shows_the_raw_value(client, dpo_user, alice, remembered):
    client.force_login(dpo_user)

    response = client.post(
        f"/console/acme/users/{alice.pk}/reveal/", {"reason": "the user asked for a callback"}, follow=True
    )

    assert response.status_code == 200 and PHONE in response.content.decode()
    assert AuditEntry.objects.filter(action="personal_data.reveal").count() == 1
    assert PHONE not in client.get(f"/console/acme/users/{alice.pk}/").content.decode()
