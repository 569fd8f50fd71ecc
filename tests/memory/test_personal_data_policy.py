"""Personal data the tenant's policy says not to store is redacted on every write path; the policy is validated and
audited; a re-scan applies a new policy to what is already stored."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import (
    AuditEntry,
    KnowledgeEntry,
    Page,
    PersonalDataPolicy,
    PersonalDataScan,
    ProfileVersion,
    ScanStatus,
)
from memory.selectors.personal_data import personal_data_policy_or_default
from memory.services.audit import Actor
from memory.services.governance import GovernanceError, knowledge_update, profile_edit, segment_update
from memory.services.personal_data import (
    PolicyError,
    personal_data_policy_update,
    personal_data_rescan,
    personal_data_scan_start,
)
from memory.services.promotion import text_hash
from tests import builders

EMAIL = "ann.lee@example.co.uk"
OPERATOR = Actor.system("test-operator")


@pytest.fixture
def tenant(space):
    return space.tenant


def test_a_tenant_without_a_policy_keeps_everything(space):
    policy = personal_data_policy_or_default(tenant=space.tenant)

    assert policy.pk is None and {policy.email, policy.secret, policy.review_mode} == {"keep", "auto"}
    page = builders.turn(space, user_message=f"Mail {EMAIL}").page
    assert Page.objects.get(pk=page.pk).user_message == f"Mail {EMAIL}"


def test_a_turn_is_redacted_before_it_is_stored(space, tenant):
    builders.personal_data_policy(tenant, email="do_not_store", secret="do_not_store")

    page = builders.turn(
        space, user_message=f"Mail {EMAIL}, password: hunter2", assistant_reply=f"Sent to {EMAIL}"
    ).page

    stored = Page.objects.get(pk=page.pk)
    assert (stored.user_message, stored.assistant_reply) == ("Mail [email], password: [secret]", "Sent to [email]")


@pytest.mark.parametrize("action", ["keep", "mask_console", "mask_prompts"])
def test_other_policy_values_store_the_value_as_said(space, tenant, action):
    builders.personal_data_policy(tenant, email=action)

    page = builders.turn(space, user_message=f"Mail {EMAIL}").page

    assert Page.objects.get(pk=page.pk).user_message == f"Mail {EMAIL}"


def test_edits_are_redacted_before_they_are_stored_and_audited(space, tenant, embedder):
    builders.personal_data_policy(tenant, email="do_not_store")
    entry = builders.knowledge(space.end_user, text="The user likes tea.")
    segment = builders.segment_with_pages(space, summary="Tea")

    knowledge_update(entry=entry, text=f"The user's email is {EMAIL}.", actor=OPERATOR, reason="correction")
    segment_update(segment=segment, summary=f"Tea orders sent to {EMAIL}", keywords=["tea", EMAIL], actor=OPERATOR,
                   reason="summary")  # fmt: skip
    version = profile_edit(end_user=space.end_user, text=f"Writes from {EMAIL}.", actor=OPERATOR, reason="profile")

    entry.refresh_from_db()
    segment.refresh_from_db()
    assert entry.text == "The user's email is [email]." and entry.text_hash == text_hash(entry.text)
    assert (segment.summary, segment.keywords) == ("Tea orders sent to [email]", ["tea"])
    assert ProfileVersion.objects.get(pk=version.pk).text == "Writes from [email]."
    assert not [text for text in embedder.inputs if EMAIL in text]
    assert not AuditEntry.objects.filter(after__icontains=EMAIL).exists()


def test_facts_and_profiles_promotion_derives_are_redacted(space, tenant, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        for n in range(9):  # recorded while the policy kept emails: pages past STM are placed into segments
            builders.turn(space, user_message=f"My email address is {EMAIL} and I love sourdough bread {n}.")
    builders.personal_data_policy(tenant, email="do_not_store")

    builders.segments_promote(space)

    facts = list(KnowledgeEntry.objects.filter(end_user=space.end_user).values_list("text", flat=True))
    profiles = list(ProfileVersion.objects.filter(end_user=space.end_user).values_list("text", flat=True))
    assert facts and profiles
    assert not [text for text in facts + profiles if EMAIL in text]
    assert any("[email]" in text for text in facts + profiles)


def test_the_policy_is_validated_and_a_bad_value_saves_nothing(tenant):
    builders.personal_data_policy(tenant, email="mask_console")

    with pytest.raises(PolicyError, match="not a valid regular expression"):
        personal_data_policy_update(
            tenant=tenant, actor=OPERATOR, reason="r", email="keep", government_id_patterns=["(unclosed"]
        )
    with pytest.raises(PolicyError, match="region code"):
        personal_data_policy_update(tenant=tenant, actor=OPERATOR, reason="r", phone_region="XX")
    with pytest.raises(PolicyError, match="choose one of"):
        personal_data_policy_update(tenant=tenant, actor=OPERATOR, reason="r", email="hide")
    with pytest.raises(PolicyError, match="reason"):
        personal_data_policy_update(tenant=tenant, actor=OPERATOR, reason=" ", email="keep")

    assert PersonalDataPolicy.objects.get(tenant=tenant).email == "mask_console"


def test_a_policy_change_is_audited_with_before_and_after(tenant):
    builders.personal_data_policy(tenant, secret="do_not_store", review_keywords=["Diagnosis", " therapy "])

    entry = AuditEntry.objects.get(action="personal_data.policy_update")
    assert entry.before["secret"] == "keep" and entry.after["secret"] == "do_not_store"
    assert entry.after["review_keywords"] == ["diagnosis", "therapy"]


def test_a_rescan_redacts_stored_memory_and_records_its_progress(space, tenant, django_capture_on_commit_callbacks):
    page = builders.turn(space, user_message=f"Mail {EMAIL}").page
    entry = builders.knowledge(space.end_user, text=f"The user's email is {EMAIL}.")
    builders.personal_data_policy(tenant, email="do_not_store")

    with django_capture_on_commit_callbacks(execute=True):
        scan = personal_data_scan_start(tenant=tenant, actor=OPERATOR)

    scan.refresh_from_db()
    assert scan.status == ScanStatus.DONE and scan.scanned == scan.total == 3  # the page (texts, summaries), the fact
    assert scan.redacted == 2 and scan.found == {"email": 2} and scan.percent == 100
    assert Page.objects.get(pk=page.pk).user_message == "Mail [email]"
    entry.refresh_from_db()
    assert entry.text == "The user's email is [email]." and entry.text_hash == text_hash(entry.text)
    assert personal_data_rescan(scan_id=scan.pk) is None  # a second delivery does nothing


def test_only_one_rescan_of_a_tenant_is_queued_at_a_time(tenant):
    first = personal_data_scan_start(tenant=tenant, actor=OPERATOR)

    assert personal_data_scan_start(tenant=tenant, actor=OPERATOR) == first


def test_a_scan_silent_for_longer_than_a_task_may_run_is_failed_and_replaced(tenant, settings):
    long_ago = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 1)
    dead = PersonalDataScan.objects.create(tenant=tenant, status=ScanStatus.RUNNING, progressed_at=long_ago)

    fresh = personal_data_scan_start(tenant=tenant, actor=OPERATOR)

    dead.refresh_from_db()
    assert fresh != dead and dead.status == ScanStatus.FAILED and "worker stopped" in dead.error
    assert personal_data_rescan(scan_id=dead.pk) is None  # a late delivery does nothing


def test_facts_that_a_rescan_makes_identical_are_folded_into_one(space, tenant, django_capture_on_commit_callbacks):
    first_page, second_page = builders.page(space), builders.page(space, user_message="Another")
    first = builders.knowledge(space.end_user, text="The user's email is a@example.com.", source_pages=[first_page])
    builders.knowledge(space.end_user, text="The user's email is b@example.org.", source_pages=[second_page])
    builders.personal_data_policy(tenant, email="do_not_store")

    with django_capture_on_commit_callbacks(execute=True):
        scan = personal_data_scan_start(tenant=tenant, actor=OPERATOR)

    scan.refresh_from_db()
    assert scan.status == ScanStatus.DONE
    survivor = KnowledgeEntry.objects.get(end_user=space.end_user)
    assert (survivor.pk, survivor.text) == (first.pk, "The user's email is [email].")
    assert set(survivor.source_pages.all()) == {first_page, second_page}


def test_an_edit_that_redaction_makes_another_fact_is_refused_with_a_reason(space, tenant):
    builders.knowledge(space.end_user, text="The user's email is [email].")
    entry = builders.knowledge(space.end_user, text="The user likes tea.")
    builders.personal_data_policy(tenant, email="do_not_store")

    with pytest.raises(GovernanceError, match="already another fact"):
        knowledge_update(entry=entry, text=f"The user's email is {EMAIL}.", actor=OPERATOR, reason="edit")
    assert KnowledgeEntry.objects.get(pk=entry.pk).text == "The user likes tea."
