"""The console's personal-data screens: the policy (dpo and admin), re-scans with progress, masked values and their
audited reveal."""

from __future__ import annotations

import pytest

from memory.models import AuditEntry, PersonalDataPolicy, PersonalDataScan, ScanStatus
from tests import builders
from tests.dashboard.conftest import HX

POLICY = "/console/acme/personal-data/"
EMAIL = "ann.lee@example.co.uk"
VALID = {
    "email": "mask_console",
    "phone": "keep",
    "card": "mask_prompts",
    "iban": "keep",
    "government_id": "keep",
    "secret": "do_not_store",
    "phone_region": "gb",
    "government_id_patterns": "\\b\\d{3}-\\d{2}-\\d{4}\\b\n",
    "review_mode": "review_sensitive",
    "review_keywords": "diagnosis, therapy",
    "reason": "DPO review of Q3",
}


@pytest.fixture
def remembered(alice, assistant):
    space = builders.space_of(alice, assistant)
    builders.page(space, user_message=f"My email is {EMAIL}", assistant_reply="Noted.")
    builders.knowledge(alice, text=f"The user's email is {EMAIL}.")
    return space


@pytest.mark.parametrize("persona", ["dpo_user", "admin_user"])
def test_a_dpo_or_an_admin_edits_the_policy_and_the_change_is_audited(client, tenant, persona, request):
    client.force_login(request.getfixturevalue(persona))

    assert "Save the policy" in client.get(POLICY).content.decode()
    response = client.post(POLICY, VALID)

    assert response.status_code == 302
    policy = PersonalDataPolicy.objects.get(tenant=tenant)
    assert (policy.email, policy.secret, policy.phone_region) == ("mask_console", "do_not_store", "GB")
    assert policy.review_keywords == ["diagnosis", "therapy"]
    assert AuditEntry.objects.get(action="personal_data.policy_update").reason == "DPO review of Q3"


@pytest.mark.parametrize("persona", ["agent_user", "supervisor_user"])
def test_agents_and_supervisors_may_not_see_or_edit_the_policy(client, tenant, persona, request):
    client.force_login(request.getfixturevalue(persona))

    assert client.get(POLICY).status_code == 403
    assert client.post(POLICY, VALID).status_code == 403
    assert "/personal-data/" not in client.get("/console/acme/users/").content.decode()


def test_another_tenants_operator_gets_404(client, tenant, other_operator):
    client.force_login(other_operator)

    assert client.get(POLICY).status_code == 404


def test_a_bad_pattern_is_refused_with_its_reason_and_nothing_is_saved(client, tenant, dpo_user):
    client.force_login(dpo_user)

    response = client.post(POLICY, {**VALID, "government_id_patterns": "(unclosed"})

    assert response.status_code == 400
    assert "not a valid regular expression" in response.content.decode()
    assert not PersonalDataPolicy.objects.filter(tenant=tenant).exists()


def test_a_pattern_re2_cannot_run_is_refused_in_the_form(client, tenant, dpo_user):
    client.force_login(dpo_user)

    response = client.post(POLICY, {**VALID, "government_id_patterns": "\\b\\d{9}\\b\n(?=a)(a|aa)+$"})

    assert response.status_code == 400
    assert "cannot be run in linear time" in response.content.decode()
    assert not PersonalDataPolicy.objects.filter(tenant=tenant).exists()


def test_a_policy_without_a_reason_is_refused(client, tenant, dpo_user):
    client.force_login(dpo_user)

    response = client.post(POLICY, {**VALID, "reason": ""})

    assert response.status_code == 400 and not PersonalDataPolicy.objects.exists()


def test_a_rescan_is_started_and_its_progress_shown(
    client, tenant, dpo_user, remembered, django_capture_on_commit_callbacks
):
    builders.personal_data_policy(tenant, email="do_not_store")
    client.force_login(dpo_user)

    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"{POLICY}scans/").status_code == 302

    scan = PersonalDataScan.objects.get(tenant=tenant)
    assert scan.status == ScanStatus.DONE and scan.redacted == 2
    page = client.get(POLICY).content.decode()
    assert f'id="scan-{scan.pk}"' in page and "3 of 3 rows (100%)" in page and "email: 2" in page
    fragment = client.get(f"{POLICY}scans/{scan.pk}/", **HX).content.decode()
    assert fragment.lstrip().startswith("<tr") or ("<tr id" in fragment and "<html" not in fragment)
    assert "<html" in client.get(f"{POLICY}scans/{scan.pk}/").content.decode()


def test_a_running_scan_asks_for_its_progress_again(client, tenant, dpo_user):
    scan = PersonalDataScan.objects.create(tenant=tenant, status=ScanStatus.RUNNING, total=10, scanned=4)
    client.force_login(dpo_user)

    fragment = client.get(f"{POLICY}scans/{scan.pk}/", **HX).content.decode()

    assert 'hx-trigger="every 2s"' in fragment and "4 of 10 rows (40%)" in fragment


def test_another_tenants_scan_is_404(client, dpo_user, other_tenant):
    scan = PersonalDataScan.objects.create(tenant=other_tenant)
    client.force_login(dpo_user)

    assert client.get(f"{POLICY}scans/{scan.pk}/").status_code == 404


@pytest.mark.parametrize("action", ["keep", "mask_console", "mask_prompts", "do_not_store"])
def test_the_console_masks_from_mask_in_console_up(client, tenant, agent_user, alice, remembered, action):
    builders.personal_data_policy(tenant, email=action)
    client.force_login(agent_user)

    body = client.get(f"/console/acme/users/{alice.pk}/").content.decode()

    assert (EMAIL in body) == (action == "keep")
    assert ("[email]" in body) == (action != "keep")


def test_an_agent_cannot_reveal(client, tenant, agent_user, alice, remembered):
    builders.personal_data_policy(tenant, email="mask_console")
    client.force_login(agent_user)

    assert "a dpo or admin can reveal it" in client.get(f"/console/acme/users/{alice.pk}/").content.decode()
    assert client.post(f"/console/acme/users/{alice.pk}/reveal/", {"reason": "curious"}).status_code == 403


def test_a_dpo_reveals_with_a_reason_and_it_is_audited(client, tenant, dpo_user, alice, remembered):
    builders.personal_data_policy(tenant, email="mask_console")
    client.force_login(dpo_user)

    refused = client.post(f"/console/acme/users/{alice.pk}/reveal/", {"reason": ""})
    assert refused.status_code == 302 and not AuditEntry.objects.filter(action="personal_data.reveal").exists()
    posted = client.post(
        f"/console/acme/users/{alice.pk}/reveal/?tab=short-term", {"reason": "customer asked to confirm"}
    )
    assert posted.status_code == 302 and posted["Location"] == f"/console/acme/users/{alice.pk}/reveal/?tab=short-term"
    response = client.get(posted["Location"])

    body = response.content.decode()
    assert response.status_code == 200 and EMAIL in body and "shown unmasked on this page only" in body
    assert response["Cache-Control"] == "no-store"
    audit = AuditEntry.objects.get(action="personal_data.reveal")
    assert (audit.subject_id, audit.reason) == (alice.pk, "customer asked to confirm")
    assert EMAIL not in client.get(f"/console/acme/users/{alice.pk}/").content.decode()  # masked again


def test_refreshing_a_revealed_page_neither_reposts_nor_audits_again(client, tenant, dpo_user, alice, remembered):
    builders.personal_data_policy(tenant, email="mask_console")
    client.force_login(dpo_user)
    posted = client.post(f"/console/acme/users/{alice.pk}/reveal/", {"reason": "customer asked to confirm"})
    assert EMAIL in client.get(posted["Location"]).content.decode()
    reads = AuditEntry.objects.filter(action__in=["personal_data.reveal", "memory.read"]).count()

    refreshed = client.get(posted["Location"], follow=True)

    assert refreshed.redirect_chain[0][0] == f"/console/acme/users/{alice.pk}/"
    body = refreshed.content.decode()
    assert EMAIL not in body and "Personal data is masked again" in body
    assert AuditEntry.objects.filter(action="personal_data.reveal").count() == 1
    assert AuditEntry.objects.filter(action__in=["personal_data.reveal", "memory.read"]).count() == reads + 1


def test_a_reveal_of_another_tenants_user_is_404(client, dpo_user, stranger):
    client.force_login(dpo_user)

    assert client.post(f"/console/acme/users/{stranger.pk}/reveal/", {"reason": "x"}).status_code == 404


def test_the_user_page_takes_no_query_for_the_policy(
    client, tenant, agent_user, alice, remembered, django_assert_max_num_queries
):
    builders.personal_data_policy(tenant, email="mask_console")
    client.force_login(agent_user)
    client.get(f"/console/acme/users/{alice.pk}/")

    with django_assert_max_num_queries(20) as queries:
        client.get(f"/console/acme/users/{alice.pk}/")

    assert not [q for q in queries.captured_queries if 'FROM "memory_personaldatapolicy"' in q["sql"]]


def test_the_context_preview_shows_the_prompt_as_the_model_gets_it(client, tenant, dpo_user, alice, remembered):
    builders.personal_data_policy(tenant, email="mask_prompts")
    client.force_login(dpo_user)

    body = client.get(f"/console/acme/users/{alice.pk}/preview/", {"q": "what is my email"}).content.decode()

    assert "[email]" in body and EMAIL not in body
