"""A supervisor settles a flag by acting on the item from the queue (edit, mark outdated, forget): the action and
the resolution happen together, the resolution names the action and its audit entry carries the escalation id.
The overview counts the queue for supervisors; agents may flag any kind of memory item."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, Escalation, KnowledgeEntry, ProfileVersion, Segment
from memory.services.audit import Actor
from memory.services.validity import escalation_open, escalation_resolve
from tests import builders
from tests.dashboard.conftest import HX


@pytest.fixture
def fact(alice, alice_space):
    return KnowledgeEntry.objects.filter(end_user=alice).order_by("id").first()


@pytest.fixture
def flagged(tenant, fact, agent_user):
    return escalation_open(tenant=tenant, item=fact, actor=Actor.operator(agent_user), note="She drinks tea now")


def _outdated_url(fact) -> str:
    return f"/console/acme/act/knowledge/{fact.pk}/outdated/"


def test_the_overview_counts_the_queue_for_supervisors_only(client, supervisor_user, agent_user, flagged):
    client.force_login(supervisor_user)
    body = client.get("/console/acme/").content.decode()
    assert 'id="escalation-summary"' in body and "open flag<" in body and "the oldest has waited" in body
    assert 'id="escalation-summary"' not in client.get("/console/acme/", **HX).content.decode()

    client.force_login(agent_user)
    assert 'id="escalation-summary"' not in client.get("/console/acme/").content.decode()


def test_the_overview_says_when_nothing_waits(client, supervisor_user, tenant):
    client.force_login(supervisor_user)

    assert "No flag is waiting" in client.get("/console/acme/").content.decode()


def test_the_queue_offers_edit_mark_outdated_and_forget_on_the_flagged_item(client, supervisor_user, fact, flagged):
    client.force_login(supervisor_user)

    body = client.get("/console/acme/escalations/").content.decode()

    for action in ("edit", "outdated", "forget"):
        assert f"/act/knowledge/{fact.pk}/{action}/?escalation={flagged.pk}&amp;next=/console/acme/escalations/" in body


def test_the_action_form_says_which_flag_it_settles_as_a_modal_and_as_a_page(client, supervisor_user, fact, flagged):
    client.force_login(supervisor_user)
    url = f"{_outdated_url(fact)}?escalation={flagged.pk}"

    modal, page = client.get(url, **HX).content.decode(), client.get(url).content.decode()

    assert modal.lstrip().startswith('<div class="modal-backdrop">') and "<html" in page
    for body in (modal, page):
        assert "This settles the flag of agent-of-acme" in body
        assert f'name="escalation" value="{flagged.pk}"' in body


def test_marking_outdated_from_the_queue_resolves_the_flag_with_that_action(client, supervisor_user, fact, flagged):
    client.force_login(supervisor_user)
    form = {
        "reason": "she told us",
        "replacement": "tea",
        "escalation": flagged.pk,
        "next": "/console/acme/escalations/",
    }

    response = client.post(_outdated_url(fact), form)

    assert response.status_code == 302 and response["Location"] == "/console/acme/escalations/"
    fact.refresh_from_db()
    flagged.refresh_from_db()
    assert fact.valid_to is not None and fact.outdated_note == "tea"
    assert (flagged.state, flagged.resolved_by, flagged.resolution) == (
        "resolved", supervisor_user, "Mark outdated: she told us"
    )  # fmt: skip
    resolve = AuditEntry.objects.get(action="escalation.resolve")
    assert resolve.detail == {"escalation": flagged.pk, "action": "outdated"}
    assert (resolve.target_type, resolve.target_id) == ("knowledge", fact.pk)
    assert AuditEntry.objects.filter(action="knowledge.outdated", target_id=fact.pk).exists()


def test_editing_from_the_queue_with_htmx_goes_back_to_the_queue(client, supervisor_user, fact, flagged):
    client.force_login(supervisor_user)
    form = {"text": "The user drinks tea", "reason": "fixed", "escalation": flagged.pk}

    response = client.post(f"/console/acme/act/knowledge/{fact.pk}/edit/?next=/console/acme/escalations/", form, **HX)

    assert response["HX-Redirect"] == "/console/acme/escalations/"
    assert KnowledgeEntry.objects.get(pk=fact.pk).text == "The user drinks tea"
    assert Escalation.objects.get().resolution == "Edit: fixed"


def test_forgetting_from_the_queue_resolves_the_flag_and_goes_back_to_the_queue(client, supervisor_user, fact, flagged):
    client.force_login(supervisor_user)
    form = {"reason": "wrong", "escalation": flagged.pk, "next": "/console/acme/escalations/"}

    response = client.post(f"/console/acme/act/knowledge/{fact.pk}/forget/", form)

    assert response["Location"] == "/console/acme/escalations/"
    assert not KnowledgeEntry.objects.filter(pk=fact.pk).exists()
    assert Escalation.objects.get().state == "resolved"
    assert AuditEntry.objects.get(action="escalation.resolve").detail["action"] == "forget"


def test_a_flag_settled_meanwhile_or_on_another_item_is_404_and_changes_nothing(
    client, supervisor_user, alice, fact, flagged
):
    other = builders.knowledge(alice, text="The user lives in Paris")
    client.force_login(supervisor_user)
    form = {"reason": "r", "escalation": flagged.pk}

    assert client.post(f"/console/acme/act/knowledge/{other.pk}/outdated/", form).status_code == 404
    escalation_resolve(escalation=flagged, actor=Actor.operator(supervisor_user), resolution="done")
    assert client.post(_outdated_url(fact), form).status_code == 404
    assert client.post(_outdated_url(fact), {"reason": "r", "escalation": "x1"}).status_code == 404
    assert KnowledgeEntry.objects.filter(valid_to__isnull=False).count() == 0


def test_an_agent_flags_a_segment_and_a_profile_version_and_the_queue_shows_them(
    client, agent_user, supervisor_user, alice, alice_space
):
    segment = Segment.objects.filter(space=alice_space).first()
    version = builders.profile(alice, text="The user lives at 1 Old Street.")
    client.force_login(agent_user)
    assert 'data-action="flag"' in client.get(f"/console/acme/users/{alice.pk}/profile/").content.decode()

    client.post(f"/console/acme/flag/segment/{segment.pk}/", {"note": "topic is wrong"})
    client.post(f"/console/acme/flag/profile_version/{version.pk}/", {"note": "moved"})

    assert set(Escalation.objects.values_list("target_type", flat=True)) == {"segment", "profile_version"}
    client.force_login(supervisor_user)
    body = client.get("/console/acme/escalations/").content.decode()
    assert segment.summary in body and "The user lives at 1 Old Street." in body
    assert ProfileVersion.objects.filter(pk=version.pk).exists()
