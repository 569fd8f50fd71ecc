"""Also seen in issue 29: REST reads of pages, segments, knowledge and profiles are audited as reads (memory.read),
as the MCP tools' reads are: once per user a list shows, once per item read, with the token as actor."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry
from memory.selectors.governance import audit_verify
from tests import builders


def reads() -> list[tuple[str, int | None, str, str]]:
    rows = AuditEntry.objects.filter(action="memory.read").order_by("seq")
    return [(entry.detail["what"], entry.subject_id, entry.actor_kind, entry.request_id) for entry in rows]


@pytest.mark.parametrize(
    ("url", "what"),
    [
        ("/api/v1/pages/", "api pages"),
        ("/api/v1/segments/", "api segments"),
        ("/api/v1/knowledge/", "api knowledge"),
        ("/api/v1/profile-versions/", "api profile versions"),
    ],
)
def test_a_list_is_audited_once_for_each_user_whose_memory_it_shows(api, memory, alice, bob, assistant, url, what):
    builders.page(builders.space_of(bob, assistant), user_message="Hi.", assistant_reply="Hello.")
    builders.segment(builders.space_of(bob, assistant), summary="greetings")
    builders.knowledge(bob, text="Bob says hi.")
    builders.profile(bob, text="Bob is friendly.")

    assert api.get(url, HTTP_X_REQUEST_ID="r-1").status_code == 200

    assert sorted(reads()) == sorted([(what, alice.pk, "api_token", "r-1"), (what, bob.pk, "api_token", "r-1")])
    assert audit_verify(tenant=alice.tenant).ok


def test_a_list_filtered_to_one_user_is_audited_for_that_user_only(api, memory, alice, bob, assistant):
    builders.page(builders.space_of(bob, assistant), user_message="Hi.", assistant_reply="Hello.")
    api.get("/api/v1/pages/", {"user": "alice"})
    assert [subject for _, subject, _, _ in reads()] == [alice.pk]


def test_an_empty_list_audits_nothing(api, tenant):
    api.get("/api/v1/pages/")
    assert reads() == []


@pytest.mark.parametrize("kind", ["pages", "segments", "knowledge", "profile-versions"])
def test_reading_one_item_is_audited_with_the_item(api, memory, alice, kind):
    item = {"pages": memory.mtm_page, "segments": memory.segment, "knowledge": memory.knowledge}.get(
        kind, memory.profile
    )
    assert api.get(f"/api/v1/{kind}/{item.pk}/").status_code == 200
    entry = AuditEntry.objects.get(action="memory.read")
    assert (entry.subject_id, entry.target_id, entry.actor_kind) == (alice.pk, item.pk, "api_token")


def test_reading_a_users_profile_and_a_segments_heat_is_audited(api, memory, alice):
    api.get("/api/v1/users/alice/profile/")
    api.get(f"/api/v1/segments/{memory.segment.pk}/heat/")
    assert [(what, subject) for what, subject, _, _ in reads()] == [
        ("api profile", alice.pk),
        ("api segment heat", alice.pk),
    ]
