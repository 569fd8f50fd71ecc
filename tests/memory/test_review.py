"""The review queue: under each review mode, which new facts and profile versions wait; approving, editing and
approving, and rejecting them, each audited."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, KnowledgeEntry, ProfileVersion, ReviewState
from memory.selectors.personal_data import personal_data_policy_or_default
from memory.services.audit import Actor
from memory.services.governance import GovernanceError
from memory.services.personal_data import review_reasons
from memory.services.review import knowledge_review, profile_version_review
from tests import builders

REVIEWER = Actor.system("test-reviewer")
SAID = [
    "I bake sourdough bread every Sunday with my daughter.",
    "My therapist says baking sourdough bread helps my anxiety.",
    "My email address is ann.lee@example.co.uk and I order bread weekly.",
]


@pytest.fixture
def promoted(space, django_capture_on_commit_callbacks):
    """Promote what Ann said (a neutral fact, a health fact, an email) once the policy is set."""

    def promote():
        with django_capture_on_commit_callbacks(execute=True):
            for n in range(3):
                for message in SAID:
                    builders.turn(space, user_message=message.replace("Sunday", f"Sunday {n}"))
            for _ in range(7):  # small talk pushes all of it out of short-term memory
                builders.turn(space, user_message="Thanks, see you later.")
        builders.segments_promote(space)
        return {e.text: e.review_state for e in KnowledgeEntry.objects.filter(end_user=space.end_user)}

    return promote


def states(facts: dict[str, str], word: str) -> set[str]:
    return {state for text, state in facts.items() if word in text}


def test_auto_approves_every_new_fact_and_profile(space, promoted):
    facts = promoted()

    assert facts and set(facts.values()) == {ReviewState.APPROVED}
    assert {v.review_state for v in ProfileVersion.objects.filter(end_user=space.end_user)} == {"approved"}


def test_review_all_holds_every_new_fact_and_profile(space, promoted):
    builders.personal_data_policy(space.tenant, review_mode="review_all")

    facts = promoted()

    assert facts and set(facts.values()) == {ReviewState.PENDING}
    assert {v.review_state for v in ProfileVersion.objects.filter(end_user=space.end_user)} == {"pending"}


def test_review_sensitive_holds_facts_with_personal_data_or_a_review_keyword(space, promoted):
    builders.personal_data_policy(space.tenant, review_mode="review_sensitive", review_keywords=["therap", "anxiety"])

    facts = promoted()

    assert states(facts, "therapist") == {ReviewState.PENDING}
    assert states(facts, "@example") == {ReviewState.PENDING}
    assert states(facts, "every Sunday") == {ReviewState.APPROVED}


def test_review_reasons_name_the_categories_and_keywords_found(space):
    builders.personal_data_policy(space.tenant, review_keywords=["diagnos", "hiv status"])
    policy = personal_data_policy_or_default(tenant=space.tenant)

    reasons = review_reasons(policy, "Diagnosed in May; HIV status shared with ann@example.com")

    assert reasons == ["email", "keyword: diagnos", "keyword: hiv status"]


def pending_fact(space, text="The user sees a therapist."):
    entry = builders.knowledge(space.end_user, text=text)
    KnowledgeEntry.objects.filter(pk=entry.pk).update(review_state=ReviewState.PENDING)
    entry.refresh_from_db()
    return entry


def test_approving_a_fact_is_audited(space):
    entry = knowledge_review(entry=pending_fact(space), decision="approve", actor=REVIEWER)

    assert KnowledgeEntry.objects.get(pk=entry.pk).review_state == ReviewState.APPROVED
    audit = AuditEntry.objects.get(action="knowledge.approve")
    assert (audit.target_id, audit.reason, audit.before, audit.after) == (entry.pk, "approved in review", None, None)


def test_editing_and_approving_a_fact_rewrites_it_re_embeds_it_and_keeps_before_and_after(space, embedder):
    builders.personal_data_policy(space.tenant, email="do_not_store")
    entry = pending_fact(space)

    knowledge_review(entry=entry, decision="approve", text="The user sees a counsellor (ann@example.com).",
                     actor=REVIEWER, reason="softer wording")  # fmt: skip

    entry.refresh_from_db()
    assert (entry.text, entry.review_state) == ("The user sees a counsellor ([email]).", "approved")
    assert embedder.inputs[-1] == entry.text
    audit = AuditEntry.objects.get(action="knowledge.approve")
    assert (audit.before, audit.after, audit.reason) == ("The user sees a therapist.", entry.text, "softer wording")


def test_rejecting_needs_a_reason_and_is_audited(space):
    entry = pending_fact(space)

    with pytest.raises(GovernanceError, match="reason"):
        knowledge_review(entry=entry, decision="reject", actor=REVIEWER)
    knowledge_review(entry=entry, decision="reject", actor=REVIEWER, reason="health data")

    assert KnowledgeEntry.objects.get(pk=entry.pk).review_state == ReviewState.REJECTED
    assert AuditEntry.objects.get(action="knowledge.reject").reason == "health data"


def test_only_pending_items_are_reviewed(space):
    entry = builders.knowledge(space.end_user)

    with pytest.raises(GovernanceError, match="not awaiting review"):
        knowledge_review(entry=entry, decision="reject", actor=REVIEWER, reason="late")


def test_editing_a_fact_into_another_fact_of_its_store_is_refused(space):
    builders.knowledge(space.end_user, text="The user likes tea.")

    with pytest.raises(GovernanceError, match="already another fact"):
        knowledge_review(entry=pending_fact(space), decision="approve", text="The user likes tea.", actor=REVIEWER,
                         reason="dup")  # fmt: skip


def test_a_profile_version_is_approved_edited_or_rejected_like_a_fact(space):
    version = builders.profile(space.end_user, text="Ann sees a therapist.")
    ProfileVersion.objects.filter(pk=version.pk).update(review_state=ReviewState.PENDING)
    version.refresh_from_db()

    profile_version_review(version=version, decision="approve", text="Ann bakes.", actor=REVIEWER, reason="health")

    version.refresh_from_db()
    assert (version.text, version.review_state) == ("Ann bakes.", "approved")
    assert AuditEntry.objects.get(action="profile.approve").before == "Ann sees a therapist."
