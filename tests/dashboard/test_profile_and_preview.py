"""Profile history with word diffs between versions; the context preview shows the prompt's memory, records no visit."""

from __future__ import annotations

from dashboard.diffs import text_diff
from memory.models import AuditEntry, HeatSample, ProfileVersion, Segment
from memory.services.audit import Actor
from memory.services.governance import profile_edit
from tests.dashboard.conftest import HX


def test_a_word_diff_marks_what_was_removed_and_added():
    spans = text_diff("Likes tea and cake.\nLives in Leeds.", "Likes coffee and cake.\nLives in Leeds.")

    assert [(s.op, s.text) for s in spans if s.op != "equal"] == [("delete", "tea"), ("insert", "coffee")]
    assert "".join(s.text for s in spans if s.op != "delete") == "Likes coffee and cake.\nLives in Leeds."


def _two_versions(alice):
    operator = Actor("operator", "1", "sam")
    profile_edit(end_user=alice, text="Alice likes tea.\nLives in Leeds.", actor=operator, reason="r")
    profile_edit(end_user=alice, text="Alice likes coffee.\nLives in Leeds.", actor=operator, reason="r")


def test_the_profile_page_diffs_the_previous_version_against_the_current_one(client, agent_user, alice):
    _two_versions(alice)
    client.force_login(agent_user)

    response = client.get(f"/console/acme/users/{alice.pk}/profile/")

    diff = response.context["diff"]
    assert (diff.old.number, diff.new.number) == (1, 2)
    body = response.content.decode()
    assert "<del>tea.</del>" in body and "<ins>coffee.</ins>" in body and "<html" in body
    assert AuditEntry.objects.filter(action="memory.read", detail={"what": "profile history"}).exists()


def test_with_htmx_the_profile_page_renders_only_the_diff_of_the_chosen_versions(client, agent_user, alice):
    _two_versions(alice)
    client.force_login(agent_user)

    body = client.get(f"/console/acme/users/{alice.pk}/profile/", {"a": 2, "b": 1}, **HX).content.decode()

    assert body.lstrip().startswith('<div id="diff">') and "<html" not in body
    assert "<del>coffee.</del>" in body and "<ins>tea.</ins>" in body


def test_a_user_without_a_profile_is_told_how_one_appears(client, supervisor_user, bob):
    client.force_login(supervisor_user)

    body = client.get(f"/console/acme/users/{bob.pk}/profile/").content.decode()

    assert "has no profile yet" in body and "write one by hand" in body


def test_the_preview_shows_the_chats_prompt_section_by_section(client, agent_user, alice, alice_space):
    client.force_login(agent_user)

    response = client.get(f"/console/acme/users/{alice.pk}/preview/", {"q": "Where can I eat vegetarian in Lisbon?"})

    preview = response.context["preview"]
    assert [s.title for s in preview.sections] == [
        "Instructions and persona",
        "The user's profile",
        "Facts you remember",
        "Earlier conversations, by topic (retrieved as relevant)",
        "The latest turns of this conversation, oldest first",
        "The user's message",
    ]
    earlier = preview.sections[3].items
    assert earlier and any("Lisbon" in item.text for item in earlier)
    body = response.content.decode()
    assert "The prompt exactly as sent" in body and "&lt;memory&gt;" in body and "<html" in body
    assert f"/console/acme/pages/{earlier[0].id}/" in body
    assert "found by: words &#x27;lisbon&#x27;" in body


def test_the_preview_shows_what_the_token_budget_leaves_out(client, agent_user, alice, alice_space, settings):
    settings.CHAT_PROMPT_TOKEN_BUDGET = 400
    client.force_login(agent_user)

    response = client.get(f"/console/acme/users/{alice.pk}/preview/", {"q": "Lisbon"})

    assert response.context["preview"].prompt.dropped
    assert "Left out to fit the token budget" in response.content.decode()


def test_the_preview_records_no_visit_but_audits_the_read(client, agent_user, alice, alice_space):
    before = list(Segment.objects.filter(space=alice_space).values_list("id", "n_visit", "last_touched_at"))
    samples = HeatSample.objects.count()
    client.force_login(agent_user)

    client.get(f"/console/acme/users/{alice.pk}/preview/", {"q": "Lisbon trip"})

    assert list(Segment.objects.filter(space=alice_space).values_list("id", "n_visit", "last_touched_at")) == before
    assert HeatSample.objects.count() == samples
    assert AuditEntry.objects.filter(action="memory.read", detail={"what": "context preview"}).count() == 1


def test_with_htmx_the_preview_renders_only_its_fragment(client, agent_user, alice, alice_space):
    client.force_login(agent_user)

    body = client.get(f"/console/acme/users/{alice.pk}/preview/", {"q": "bread"}, **HX).content.decode()

    assert body.lstrip().startswith('<div id="preview">') and "<html" not in body and "sourdough" in body


def test_the_preview_without_a_question_asks_for_one_and_audits_nothing(client, agent_user, alice, alice_space):
    client.force_login(agent_user)

    body = client.get(f"/console/acme/users/{alice.pk}/preview/").content.decode()

    assert "Ask a question" in body and not AuditEntry.objects.exists()


def test_profile_and_preview_of_another_tenants_user_are_404(client, admin_user, stranger):
    client.force_login(admin_user)

    assert client.get(f"/console/acme/users/{stranger.pk}/profile/").status_code == 404
    assert client.get(f"/console/acme/users/{stranger.pk}/preview/", {"q": "x"}).status_code == 404
    assert ProfileVersion.objects.count() == 0
