"""A memory bundle carries review state and validity: a rejected fact stays rejected and a superseded one superseded
in the importing tenant, approved and pending items take the importing tenant's review mode, withheld and outdated
turns stay so, and a bundle from before these fields still imports."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.bundles import BundleInvalid
from memory.models import KnowledgeEntry, Page, ProfileVersion, ReviewState
from memory.services.bundle_import import memory_import
from tests import builders
from tests.bundles import DPO, bundle_of

REPLACED_AT = datetime(2026, 1, 5, tzinfo=UTC)
NEW_FIELDS = {"review_state", "slot", "valid_from", "valid_to", "superseded_by", "outdated_note", "withheld"}


@pytest.fixture
def reviewed(alice, assistant):
    """Alice's memory in a reviewing tenant: a rejected fact with its withheld turn, coffee replaced by tea."""
    builders.personal_data_policy(alice.tenant, review_mode="review_all")
    space = builders.space_of(alice, assistant)
    segment = builders.segment(space, summary="health")
    said = builders.page(space, user_message="My therapist helps with my anxiety.", segment=segment)
    Page.objects.filter(pk=said.pk).update(withheld=True, valid_to=REPLACED_AT, outdated_note="no longer")
    therapist = builders.knowledge(alice, text="The user sees a therapist.", source_pages=[said])
    tea = builders.knowledge(alice, text="The user drinks tea.")
    coffee = builders.knowledge(alice, text="The user drinks coffee.")
    KnowledgeEntry.objects.filter(pk=therapist.pk).update(review_state=ReviewState.REJECTED)
    KnowledgeEntry.objects.filter(pk__in=[tea.pk, coffee.pk]).update(slot="drink")
    KnowledgeEntry.objects.filter(pk=coffee.pk).update(valid_to=REPLACED_AT, superseded_by=tea, outdated_note="tea")
    builders.profile(alice, text="Ann drinks tea. The user sees a therapist.")
    return bundle_of(alice)


def facts_of(end_user) -> dict[str, KnowledgeEntry]:
    return {k.text: k for k in KnowledgeEntry.objects.filter(end_user=end_user).select_related("superseded_by")}


def test_a_rejected_fact_stays_rejected_and_a_superseded_one_stays_superseded(reviewed, stranger):
    memory_import(end_user=stranger, bundle=reviewed, actor=DPO)

    facts = facts_of(stranger)
    assert facts["The user sees a therapist."].review_state == ReviewState.REJECTED
    coffee = facts["The user drinks coffee."]
    assert coffee.superseded_by == facts["The user drinks tea."]  # linked inside the target
    assert (coffee.valid_to, coffee.outdated_note, coffee.slot) == (REPLACED_AT, "tea", "drink")
    assert facts["The user drinks tea."].review_state == ReviewState.APPROVED  # the target reviews nothing


def test_withheld_and_outdated_turns_stay_so(reviewed, stranger):
    memory_import(end_user=stranger, bundle=reviewed, actor=DPO)

    page = Page.objects.get(space__end_user=stranger, user_message__startswith="My therapist")
    assert (page.withheld, page.valid_to, page.outdated_note) == (True, REPLACED_AT, "no longer")


def test_the_imported_profile_loses_the_text_of_the_rejected_facts(reviewed, stranger):
    memory_import(end_user=stranger, bundle=reviewed, actor=DPO)

    assert [v.text for v in ProfileVersion.objects.filter(end_user=stranger)] == ["Ann drinks tea."]


def test_approved_items_wait_for_review_when_the_target_tenant_reviews(reviewed, stranger):
    builders.personal_data_policy(stranger.tenant, review_mode="review_all")

    memory_import(end_user=stranger, bundle=reviewed, actor=DPO)

    states = {text: fact.review_state for text, fact in facts_of(stranger).items()}
    assert states == {"The user sees a therapist.": "rejected", "The user drinks tea.": "pending",
                      "The user drinks coffee.": "pending"}  # fmt: skip
    assert {v.review_state for v in ProfileVersion.objects.filter(end_user=stranger)} == {"pending"}


def test_a_bundle_from_before_review_states_imports_with_defaults(reviewed, stranger):
    for fact in reviewed["knowledge"]:
        for name in NEW_FIELDS:
            fact.pop(name, None)
    for page in reviewed["memory"][0]["pages"]:
        for name in NEW_FIELDS | {"outdated_note"}:
            page.pop(name, None)
    reviewed["profile_versions"][0].pop("review_state")

    memory_import(end_user=stranger, bundle=reviewed, actor=DPO)

    facts = facts_of(stranger)
    assert {f.review_state for f in facts.values()} == {ReviewState.APPROVED}
    assert all(f.valid_to is None and f.superseded_by is None for f in facts.values())
    assert not Page.objects.filter(space__end_user=stranger, withheld=True).exists()


def test_a_fact_superseded_by_a_fact_not_in_the_bundle_is_refused(reviewed, stranger):
    reviewed["knowledge"][2]["superseded_by"] = 999_999

    with pytest.raises(BundleInvalid, match=r"knowledge\[2\]\.superseded_by"):
        memory_import(end_user=stranger, bundle=reviewed, actor=DPO)
