"""The retention screens (dpo and admin): the policy form, the dry run of the next run, per-assistant limits, run
now and the runs' history; the legal hold section of the user page; forget and erasure refused under hold."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.models import AuditEntry, EndUser, KnowledgeEntry, LegalHold, RetentionPolicy, RetentionRun
from memory.services.audit import Actor
from memory.services.legal_hold import legal_hold_place
from memory.services.retention import retention_policy_set
from tests import builders

DPO = Actor("operator", "9", "dana")
POLICY = {"pages": "180", "knowledge": "365", "profile_versions": "", "chat_replies": "90", "audit_entries": ""}


@pytest.fixture
def old_memory(alice):
    """Alice's memory from two years ago: a topic of two pages, a fact; a recent page."""
    space = builders.space_of(alice)
    long_ago = timezone.now() - timedelta(days=730)
    builders.segment_with_pages(space, summary="beans", messages=["I grow beans.", "Beans need sun."], at=long_ago)
    fact = builders.knowledge(alice, text="The user grows beans")
    builders.backdate(fact, created_at=long_ago)
    builders.page(space, user_message="I like tea.")
    return {"fact": fact}


def test_a_dpo_sees_the_policy_the_next_runs_dry_run_and_the_runs(client, dpo_user, tenant, old_memory):
    retention_policy_set(tenant=tenant, limits={"pages": 180, "knowledge": 365}, actor=DPO)
    client.force_login(dpo_user)
    response = client.get("/console/acme/retention/")
    body = response.content.decode()
    assert response.status_code == 200
    assert 'name="pages" value="180"' in body and "Last changed by dana" in body
    assert '<tr data-tier="pages"><td>Short- and mid-term pages</td><td class="num">2</td>' in body
    assert '<tr data-tier="knowledge"><td>Long-term facts</td><td class="num">1</td>' in body
    assert "No run yet." in body and 'href="/console/acme/retention/"' in body


def test_saving_the_policy_is_audited_and_the_preview_follows(client, dpo_user, tenant, old_memory):
    client.force_login(dpo_user)
    response = client.post("/console/acme/retention/", {**POLICY, "inactive_users": "12"})
    assert response.status_code == 302
    policy = RetentionPolicy.objects.get(tenant=tenant, assistant=None)
    assert (policy.pages_max_days, policy.inactive_users_max_months, policy.audit_entries_max_days) == (180, 12, None)
    entry = AuditEntry.objects.get(action="retention.policy")
    assert entry.after["pages"] == 180 and entry.actor_label == dpo_user.username
    assert "Saved the retention policy" in client.get("/console/acme/retention/").content.decode()


@pytest.mark.parametrize("bad", ["0", "-3", "ten", "99999"])
def test_a_bad_limit_is_shown_and_nothing_is_saved(client, dpo_user, tenant, bad):
    client.force_login(dpo_user)
    response = client.post("/console/acme/retention/", {**POLICY, "pages": bad})
    assert response.status_code == 200 and "field-invalid" in response.content.decode()
    assert not RetentionPolicy.objects.exists()


@pytest.mark.parametrize("role_user", ["agent_user", "supervisor_user"])
def test_agents_and_supervisors_get_403(client, request, role_user):
    client.force_login(request.getfixturevalue(role_user))
    assert client.get("/console/acme/retention/").status_code == 403
    assert client.post("/console/acme/retention/run/").status_code == 403


def test_an_admin_may_govern_retention_and_another_tenants_operator_gets_404(client, admin_user, other_operator):
    client.force_login(admin_user)
    assert client.get("/console/acme/retention/").status_code == 200
    client.force_login(other_operator)
    assert client.get("/console/acme/retention/").status_code == 404


def test_run_now_removes_what_the_preview_said_and_the_run_page_shows_it(
    client, dpo_user, tenant, old_memory, django_capture_on_commit_callbacks
):
    retention_policy_set(tenant=tenant, limits={"pages": 180, "knowledge": 365}, actor=DPO)
    client.force_login(dpo_user)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post("/console/acme/retention/run/", {"reason": "policy shortened"}).status_code == 302
    run = RetentionRun.objects.get(tenant=tenant)
    assert run.trigger == "console" and run.removed["pages"] == 2 and run.removed["knowledge"] == 1
    assert not KnowledgeEntry.objects.filter(pk=old_memory["fact"].pk).exists()
    body = client.get("/console/acme/retention/").content.decode()
    assert f'href="/console/acme/retention/runs/{run.pk}/"' in body
    detail = client.get(f"/console/acme/retention/runs/{run.pk}/").content.decode()
    assert (
        '<tr data-tier="pages"><td>Short- and mid-term pages</td><td class="num">2</td><td class="num">2</td>' in detail
    )
    assert "Along with them, as a manual forget does: topics: 1." in detail


def test_run_now_needs_a_reason_which_is_audited(
    client, dpo_user, tenant, old_memory, django_capture_on_commit_callbacks
):
    retention_policy_set(tenant=tenant, limits={"pages": 180}, actor=DPO)
    client.force_login(dpo_user)
    with django_capture_on_commit_callbacks(execute=True):
        refused = client.post("/console/acme/retention/run/", {"reason": ""}, follow=True)
    assert "Running retention now needs a reason." in refused.content.decode()
    assert not RetentionRun.objects.exists()
    assert 'name="reason"' in client.get("/console/acme/retention/").content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        client.post("/console/acme/retention/run/", {"reason": "policy shortened"})

    asked = AuditEntry.objects.get(action="retention.run_requested")
    assert (asked.reason, asked.actor_id) == ("policy shortened", str(dpo_user.pk))
    assert RetentionRun.objects.filter(tenant=tenant).count() == 1


def test_a_run_of_another_tenant_is_404(client, dpo_user, other_tenant):
    run = RetentionRun.objects.create(tenant=other_tenant, trigger="beat", started_at=timezone.now())
    client.force_login(dpo_user)
    assert client.get(f"/console/acme/retention/runs/{run.pk}/").status_code == 404


def test_an_assistants_own_limits_are_saved_and_removed(client, dpo_user, tenant, assistant):
    client.force_login(dpo_user)
    url = "/console/acme/retention/assistants/ava/"
    assert 'name="pages"' in client.get(url).content.decode()
    assert client.post(url, {"pages": "30", "knowledge": "", "chat_replies": ""}).status_code == 302
    assert RetentionPolicy.objects.get(assistant=assistant).pages_max_days == 30
    assert "30 days" in client.get("/console/acme/retention/").content.decode()
    assert client.post(url, {"remove": "1"}).status_code == 302
    assert not RetentionPolicy.objects.filter(assistant=assistant).exists()
    assert client.get("/console/acme/retention/assistants/nobody/").status_code == 404


def test_the_retention_page_costs_the_same_queries_however_many_runs_and_holds(
    client, dpo_user, tenant, alice, bob, django_assert_max_num_queries
):
    retention_policy_set(tenant=tenant, limits={"pages": 180}, actor=DPO)
    client.force_login(dpo_user)
    with django_assert_max_num_queries(16) as first:
        client.get("/console/acme/retention/")
    for end_user in (alice, bob):
        legal_hold_place(end_user=end_user, actor=DPO, reason="case")
    for _ in range(5):
        RetentionRun.objects.create(tenant=tenant, trigger="beat", started_at=timezone.now(), status="done")
    with django_assert_max_num_queries(len(first.captured_queries)):
        client.get("/console/acme/retention/")


# --- Legal hold on the user page ----------------------------------------------------------------------------------


def test_a_dpo_places_and_releases_a_hold_from_the_user_page(client, dpo_user, alice):
    client.force_login(dpo_user)
    page = client.get(f"/console/acme/users/{alice.pk}/").content.decode()
    assert "Not under legal hold" in page and "Place a legal hold" in page
    url = f"/console/acme/users/{alice.pk}/legal-hold/"
    response = client.post(url, {"reason": "litigation 2026-114"}, follow=True)
    body = response.content.decode()
    assert "is under legal hold" in body and "Under legal hold" in body and "Release the hold" in body
    assert LegalHold.objects.get(end_user=alice).placed_by == dpo_user
    client.post(url, {"reason": "case settled", "release": "1"})
    assert LegalHold.objects.get(end_user=alice).released_at is not None
    assert list(
        AuditEntry.objects.filter(target_type="legal_hold").order_by("seq").values_list("action", flat=True)
    ) == [
        "legal_hold.place",
        "legal_hold.release",
    ]


def test_a_hold_without_a_reason_is_refused(client, dpo_user, alice):
    client.force_login(dpo_user)
    response = client.post(f"/console/acme/users/{alice.pk}/legal-hold/", {"reason": " "}, follow=True)
    assert "A reason is required to place a legal hold." in response.content.decode()
    assert not LegalHold.objects.exists()


def test_a_supervisor_sees_the_hold_but_cannot_place_or_release_it(client, supervisor_user, alice):
    legal_hold_place(end_user=alice, actor=DPO, reason="litigation")
    client.force_login(supervisor_user)
    page = client.get(f"/console/acme/users/{alice.pk}/").content.decode()
    assert "Under legal hold" in page and "Release the hold" not in page
    response = client.post(f"/console/acme/users/{alice.pk}/legal-hold/", {"reason": "x", "release": "1"})
    assert response.status_code == 403 and LegalHold.objects.get().released_at is None


def test_another_tenants_user_is_404(client, dpo_user, stranger):
    client.force_login(dpo_user)
    assert client.post(f"/console/acme/users/{stranger.pk}/legal-hold/", {"reason": "x"}).status_code == 404


def test_forgetting_in_the_console_is_refused_under_hold_with_a_message(client, admin_user, alice, old_memory):
    legal_hold_place(end_user=alice, actor=DPO, reason="litigation")
    client.force_login(admin_user)
    url = f"/console/acme/act/knowledge/{old_memory['fact'].pk}/forget/"
    assert "is under a legal hold" in client.get(url).content.decode()
    response = client.post(url, {"reason": "asked"})
    assert response.status_code == 200 and "Forgetting is suspended" in response.content.decode()
    assert KnowledgeEntry.objects.filter(pk=old_memory["fact"].pk).exists()


def test_erasing_in_the_console_is_refused_under_hold_with_a_message(client, dpo_user, alice):
    legal_hold_place(end_user=alice, actor=DPO, reason="litigation")
    client.force_login(dpo_user)
    url = f"/console/acme/users/{alice.pk}/erase/"
    assert "erasure is suspended until the hold is released" in client.get(url).content.decode()
    data = {"legal_basis": "GDPR Art. 17(1)(b): consent withdrawn", "reason": "asked", "confirm": "alice"}
    response = client.post(url, data)
    assert response.status_code == 200 and "Erasure is suspended" in response.content.decode()
    assert EndUser.objects.get(pk=alice.pk).is_active
