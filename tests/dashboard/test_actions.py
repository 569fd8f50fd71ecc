"""Edit, pin, unpin, lock, unlock, mark outdated or current and forget: reason required, audited, per role (agent
and dpo 403; supervisor and admin may), and across tenants (404). Each works as an HTMX modal and as a plain form."""

from __future__ import annotations

import pytest

from memory.items import ITEM_KINDS
from memory.models import AuditEntry, KnowledgeEntry, Page, ProfileVersion, Segment
from tests import builders
from tests.dashboard.conftest import HX

REASON = "Customer asked on the phone"


def _item(space, kind: str):
    if kind == "page":
        return Page.objects.filter(space=space).order_by("seq").first()
    if kind == "segment":
        return Segment.objects.filter(space=space).order_by("id").first()
    if kind == "knowledge":
        return KnowledgeEntry.objects.filter(end_user=space.end_user).order_by("id").first()
    return ProfileVersion.objects.filter(end_user=space.end_user).order_by("-number").first()


def _prepare(item, action: str) -> None:
    """Unpin and unlock need a pinned or locked item to change; mark current an outdated one."""
    if action == "current":
        type(item).objects.filter(pk=item.pk).update(valid_to=builders.T0, outdated_note="tea")
    if action in ("unpin", "unlock"):
        builders.flags_set(item, **{"pinned" if action == "unpin" else "locked": True})


def _post_data(kind: str, action: str) -> dict:
    data = {"reason": REASON}
    if action == "edit" and kind == "segment":
        data |= {"summary": "Trips to Lisbon", "keywords": "lisbon, travel"}
    elif action == "edit":
        data["text"] = "The user is vegetarian."
    elif action == "outdated":
        data["replacement"] = "tea"
    return data


ACTIONS = [
    ("page", "pin"),
    ("page", "unpin"),
    ("page", "outdated"),
    ("page", "current"),
    ("page", "forget"),
    ("segment", "edit"),
    ("segment", "pin"),
    ("segment", "unpin"),
    ("segment", "lock"),
    ("segment", "unlock"),
    ("segment", "forget"),
    ("knowledge", "edit"),
    ("knowledge", "pin"),
    ("knowledge", "unpin"),
    ("knowledge", "lock"),
    ("knowledge", "unlock"),
    ("knowledge", "outdated"),
    ("knowledge", "current"),
    ("knowledge", "forget"),
    ("profile_version", "lock"),
    ("profile_version", "unlock"),
    ("profile_version", "forget"),
]


def _url(kind, item, action) -> str:
    return f"/console/acme/act/{kind}/{item.pk}/{action}/"


def _changed(kind: str, action: str, item) -> bool:
    model = type(item)
    if action == "forget":
        return not model.objects.filter(pk=item.pk).exists()
    fresh = model.objects.get(pk=item.pk)
    if action == "edit":
        return (fresh.summary if kind == "segment" else fresh.text) in ("Trips to Lisbon", "The user is vegetarian.")
    if action in ("outdated", "current"):
        return (fresh.valid_to is not None) is (action == "outdated")
    flag = "pinned" if action in ("pin", "unpin") else "locked"
    return getattr(fresh, flag) is (action in ("pin", "lock"))


@pytest.mark.parametrize(("kind", "action"), ACTIONS)
def test_a_supervisor_changes_memory_with_a_reason_and_it_is_audited(
    client, supervisor_user, alice_space, kind, action
):
    item = _item(alice_space, kind)
    _prepare(item, action)
    client.force_login(supervisor_user)

    response = client.post(_url(kind, item, action), _post_data(kind, action) | {"next": "/console/acme/users/"})

    assert response.status_code == 302
    expected = f"/console/acme/users/{alice_space.end_user_id}/" if action == "forget" else "/console/acme/users/"
    assert response["Location"] == expected
    assert _changed(kind, action, item)
    entry = AuditEntry.objects.exclude(action="memory.read").order_by("-seq").first()
    assert entry.actor_label == "supervisor-of-acme" and entry.subject_id == alice_space.end_user_id
    assert entry.action.endswith(action) and entry.target_id == item.pk
    assert entry.reason == REASON


@pytest.mark.parametrize(("kind", "action"), ACTIONS)
def test_an_admin_may_too_and_with_htmx_the_answer_is_a_client_redirect(client, admin_user, alice_space, kind, action):
    item = _item(alice_space, kind)
    _prepare(item, action)
    client.force_login(admin_user)

    response = client.post(_url(kind, item, action), _post_data(kind, action), **HX)

    assert response.status_code == 200 and response["HX-Redirect"] == f"/console/acme/users/{alice_space.end_user_id}/"
    assert _changed(kind, action, item)


@pytest.mark.parametrize("role_user", ["agent_user", "dpo_user"])
@pytest.mark.parametrize(("kind", "action"), ACTIONS)
def test_agents_and_dpos_get_403_and_nothing_changes(client, request, alice_space, role_user, kind, action):
    item = _item(alice_space, kind)
    _prepare(item, action)
    client.force_login(request.getfixturevalue(role_user))

    assert client.get(_url(kind, item, action)).status_code == 403
    assert client.post(_url(kind, item, action), _post_data(kind, action)).status_code == 403
    assert not _changed(kind, action, item)
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize(("kind", "action"), ACTIONS)
def test_another_tenants_items_are_404_even_for_an_admin(client, admin_user, stranger_space, kind, action):
    item = _item(stranger_space, kind)
    _prepare(item, action)
    client.force_login(admin_user)

    assert client.get(_url(kind, item, action)).status_code == 404
    assert client.post(_url(kind, item, action), _post_data(kind, action)).status_code == 404
    assert not _changed(kind, action, item)


def test_an_operator_of_another_tenant_cannot_reach_this_tenants_items(client, other_operator, alice_space):
    item = _item(alice_space, "knowledge")
    client.force_login(other_operator)

    assert client.post(_url("knowledge", item, "pin"), {"reason": REASON}).status_code == 404
    assert client.post(f"/console/globex/act/knowledge/{item.pk}/pin/", {"reason": REASON}).status_code == 404
    assert not KnowledgeEntry.objects.get(pk=item.pk).pinned


def test_without_a_reason_nothing_changes_and_the_form_says_why(client, supervisor_user, alice_space):
    item = _item(alice_space, "knowledge")
    client.force_login(supervisor_user)

    plain = client.post(_url("knowledge", item, "forget"), {"reason": "  "})
    htmx = client.post(_url("knowledge", item, "forget"), {"reason": ""}, **HX)

    assert plain.status_code == 200 and "This field is required" in plain.content.decode()
    assert "<html" in plain.content.decode()
    assert (
        htmx.status_code == 200 and "<html" not in htmx.content.decode() and "modal-backdrop" in htmx.content.decode()
    )
    assert KnowledgeEntry.objects.filter(pk=item.pk).exists() and not AuditEntry.objects.exists()


def test_the_form_is_a_modal_for_htmx_and_a_page_without(client, supervisor_user, alice_space):
    item = _item(alice_space, "segment")
    client.force_login(supervisor_user)

    modal = client.get(_url("segment", item, "edit"), **HX).content.decode()
    page = client.get(_url("segment", item, "edit")).content.decode()

    assert modal.lstrip().startswith('<div class="modal-backdrop">') and item.summary in modal
    assert "<html" in page and "modal-page" in page and 'name="summary"' in page and 'name="reason"' in page


def test_an_unchanged_flag_is_not_audited(client, supervisor_user, alice_space):
    item = _item(alice_space, "knowledge")
    client.force_login(supervisor_user)

    client.post(_url("knowledge", item, "unpin"), {"reason": REASON})

    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    ("kind", "action"), [("page", "edit"), ("page", "lock"), ("profile_version", "pin"), ("x", "pin")]
)
def test_actions_an_item_does_not_have_are_404(client, supervisor_user, alice_space, kind, action):
    item = _item(alice_space, "page" if kind == "x" else kind)
    client.force_login(supervisor_user)

    assert client.post(_url(kind, item, action), {"reason": REASON}).status_code == 404


def test_a_next_url_off_the_site_is_ignored(client, supervisor_user, alice_space):
    item = _item(alice_space, "knowledge")
    client.force_login(supervisor_user)

    response = client.post(_url("knowledge", item, "pin"), {"reason": REASON, "next": "https://evil.example/"})

    assert response["Location"] == f"/console/acme/users/{alice_space.end_user_id}/"


def test_a_supervisor_writes_a_new_profile_version(client, supervisor_user, alice, alice_space):
    client.force_login(supervisor_user)
    before = ProfileVersion.objects.filter(end_user=alice).count()

    response = client.post(f"/console/acme/users/{alice.pk}/profile/edit/", {"text": "Vegetarian.", "reason": REASON})

    assert response.status_code == 302
    current = ProfileVersion.objects.filter(end_user=alice).order_by("-number").first()
    assert current.text == "Vegetarian." and current.author == "operator"
    assert ProfileVersion.objects.filter(end_user=alice).count() == before + 1
    assert AuditEntry.objects.get(action="profile.edit").reason == REASON


def test_profile_edit_per_role_and_tenant(client, agent_user, dpo_user, admin_user, alice, stranger):
    url = f"/console/acme/users/{alice.pk}/profile/edit/"
    for operator in (agent_user, dpo_user):
        client.force_login(operator)
        assert client.post(url, {"text": "x", "reason": REASON}).status_code == 403
    client.force_login(admin_user)
    assert client.get(url, **HX).content.decode().lstrip().startswith('<div class="modal-backdrop">')
    assert client.post(url, {"text": "x", "reason": REASON}, **HX)["HX-Redirect"] == f"/console/acme/users/{alice.pk}/"
    assert (
        client.post(f"/console/acme/users/{stranger.pk}/profile/edit/", {"text": "x", "reason": REASON}).status_code
        == 404
    )


def test_the_forget_confirmation_shows_what_forgetting_would_do_and_the_audit_records_it(
    client, supervisor_user, alice_space
):
    page = Page.objects.filter(space=alice_space, segment__isnull=False).order_by("seq").first()
    impact = ITEM_KINDS["page"].item_impact(page)
    client.force_login(supervisor_user)

    body = client.get(_url("page", page, "forget"), **HX).content.decode()

    assert f"This forget {impact.describe('page')}." in body and "removes this turn" in body
    assert Page.objects.filter(pk=page.pk).exists()
    client.post(_url("page", page, "forget"), {"reason": REASON})
    assert AuditEntry.objects.get(action="page.forget").detail == {"impact": impact.as_detail()}
