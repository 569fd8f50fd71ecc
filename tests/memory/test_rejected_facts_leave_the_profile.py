"""Rejecting a fact withdraws its text from the profile: a version awaiting review is rewritten in place, the current
approved one is followed by a version without it (or withheld when it paraphrases), and approving a version never
brings a rejected fact's text back."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, KnowledgeEntry, ProfileVersion, ReviewState
from memory.services.audit import Actor
from memory.services.review import knowledge_review, profile_version_review
from memory.steps.offline_steps import PROFILE_HEADER
from tests import builders

REVIEWER = Actor.system("test-reviewer")
THERAPIST, DIAGNOSIS = "The user sees a therapist.", "The user was diagnosed with diabetes."


def held(item):
    type(item).objects.filter(pk=item.pk).update(review_state=ReviewState.PENDING)
    item.refresh_from_db()
    return item


def offline_profile(*lines: str) -> str:
    return "\n".join([PROFILE_HEADER, *(f"- {line}" for line in lines)])


@pytest.fixture
def facts(space):
    return [held(builders.knowledge(space.end_user, text=text)) for text in (THERAPIST, DIAGNOSIS)]


def reject(entry):
    return knowledge_review(entry=entry, decision="reject", actor=REVIEWER, reason="health data")


def test_approving_a_version_that_held_two_rejected_facts_keeps_neither(space, facts):
    builders.profile(space.end_user, text=offline_profile("The user likes tea."))
    version = held(builders.profile(space.end_user, text=offline_profile("The user likes tea.", THERAPIST, DIAGNOSIS)))

    for entry in facts:
        reject(entry)
    profile_version_review(version=ProfileVersion.objects.get(pk=version.pk), decision="approve", actor=REVIEWER)

    approved = ProfileVersion.objects.get(pk=version.pk)
    assert approved.review_state == ReviewState.APPROVED
    assert "therapist" not in approved.text and "diabetes" not in approved.text
    assert "likes tea" in approved.text


def test_a_pending_version_is_rewritten_in_place_and_the_change_is_audited(space, facts):
    version = held(builders.profile(space.end_user, text=offline_profile("The user likes tea.", THERAPIST)))

    rejected = reject(facts[0])

    version.refresh_from_db()
    assert version.text == offline_profile("The user likes tea.")
    assert rejected.rejection.removed_from_profile == [f"- {THERAPIST}"]
    audit = AuditEntry.objects.get(action="profile.withdraw", target_id=version.pk)
    assert THERAPIST in audit.before and THERAPIST not in audit.after


def test_the_current_approved_profile_is_followed_by_a_version_without_the_fact(space, facts):
    current = builders.profile(space.end_user, text=offline_profile("The user likes tea.", THERAPIST))
    waiting = held(builders.profile(space.end_user, text=offline_profile("The user likes jazz.")))

    reject(facts[0])

    versions = list(ProfileVersion.objects.filter(end_user=space.end_user).order_by("number"))
    assert [v.pk for v in versions[::2]] == [current.pk, waiting.pk]  # the new one sits between them
    replaced = versions[1]
    assert (replaced.text, replaced.review_state, replaced.author) == (
        offline_profile("The user likes tea."), ReviewState.APPROVED, "system",
    )  # fmt: skip
    assert ProfileVersion.objects.get(pk=current.pk).text == current.text  # history is kept
    assert AuditEntry.objects.get(action="profile.withdraw", target_id=replaced.pk).before == current.text


def test_a_current_profile_that_paraphrases_the_fact_is_withheld_until_re_derived(space, facts):
    current = builders.profile(space.end_user, text="Ann has been seeing a therapist for some months.")

    rejected = reject(facts[0])

    current.refresh_from_db()
    assert current.stale and current.text == "Ann has been seeing a therapist for some months."
    assert rejected.rejection.profile_changes[0].stale
    assert AuditEntry.objects.filter(action="profile.stale", target_id=current.pk).exists()


def test_a_version_written_after_the_rejection_loses_the_text_when_approved(space, facts):
    reject(facts[0])
    version = held(builders.profile(space.end_user, text=f"Ann likes tea. {THERAPIST}"))

    approved = profile_version_review(version=version, decision="approve", actor=REVIEWER)

    assert ProfileVersion.objects.get(pk=version.pk).text == "Ann likes tea."
    assert approved.withdrawn.removed == [THERAPIST]
    assert AuditEntry.objects.filter(action="profile.withdraw", target_id=version.pk).exists()


def test_an_edit_that_types_a_rejected_fact_back_in_is_stripped_on_approval(space, facts):
    reject(facts[0])
    version = held(builders.profile(space.end_user, text="Ann likes tea."))

    profile_version_review(version=version, decision="approve", text=f"Ann likes tea. {THERAPIST}",
                           actor=REVIEWER, reason="fuller")  # fmt: skip

    assert ProfileVersion.objects.get(pk=version.pk).text == "Ann likes tea."
    assert KnowledgeEntry.objects.get(pk=facts[0].pk).review_state == ReviewState.REJECTED
