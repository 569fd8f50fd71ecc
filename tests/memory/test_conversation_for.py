"""What a reply reads before it retrieves: the assistant, the end user, their memory space and the tenant's
personal data policy, in one statement, refusing what assistant_for and conversation_parties refuse."""

from __future__ import annotations

import pytest

from memory.models import Assistant, EndUser, MemorySpace, PersonalDataAction, PersonalDataPolicy
from memory.services.audit import Actor
from memory.services.conversation import AssistantUnnamed, PartyInactive, conversation_for
from memory.services.gdpr import user_erase
from memory.services.tenancy import assistant_create
from memory.services.turns import EndUserClosed, space_get_or_create


def test_a_known_user_with_memory_is_read_with_the_space_and_the_policy_in_one_query(
    tenant, assistant, alice, django_assert_num_queries
):
    space = space_get_or_create(end_user=alice, assistant=assistant)
    PersonalDataPolicy.objects.create(tenant=tenant, email=PersonalDataAction.MASK_PROMPTS)

    with django_assert_num_queries(1):
        parties = conversation_for(tenant=tenant, user="alice", assistant="ava")
        assert parties.space.end_user.external_id == "alice" and parties.space.assistant.external_id == "ava"
        assert parties.end_user.tenant == tenant and parties.assistant.tenant == tenant

    assert (parties.end_user, parties.assistant, parties.space) == (alice, assistant, space)
    assert parties.policy.pk is not None and parties.policy.email == PersonalDataAction.MASK_PROMPTS


def test_a_tenant_without_a_policy_gets_the_unsaved_defaults(tenant, alice):
    policy = conversation_for(tenant=tenant, user="alice", assistant=None).policy

    assert policy.pk is None and policy.tenant_id == tenant.pk and policy.email == PersonalDataAction.KEEP


def test_a_users_first_chat_creates_them_and_has_no_space_yet(tenant, assistant):
    parties = conversation_for(tenant=tenant, user="newcomer", assistant=None)

    assert parties.end_user == EndUser.objects.get(tenant=tenant, external_id="newcomer")
    assert parties.assistant == assistant and parties.space is None
    assert not MemorySpace.objects.exists()


def test_an_erased_user_is_refused_and_not_created_again(tenant, alice):
    user_erase(end_user=alice, actor=Actor.system("test"), legal_basis="Art. 17", dry_run=False)

    with pytest.raises(EndUserClosed):
        conversation_for(tenant=tenant, user="alice", assistant="ava")
    assert not EndUser.objects.filter(external_id="alice").exists()


def test_deactivated_parties_are_refused(tenant, assistant, alice):
    EndUser.objects.filter(pk=alice.pk).update(is_active=False)
    with pytest.raises(PartyInactive, match="user 'alice'"):
        conversation_for(tenant=tenant, user="alice", assistant="ava")

    Assistant.objects.filter(pk=assistant.pk).update(is_active=False)
    with pytest.raises(PartyInactive, match="assistant 'ava'"):
        conversation_for(tenant=tenant, user="alice", assistant="ava")
    with pytest.raises(Assistant.DoesNotExist, match="no active assistant"):
        conversation_for(tenant=tenant, user="alice", assistant=None)


def test_an_unknown_or_another_tenants_assistant_is_not_found(tenant, other_tenant, alice):
    with pytest.raises(Assistant.DoesNotExist):
        conversation_for(tenant=tenant, user="alice", assistant="nobody")
    assistant_create(tenant=other_tenant, external_id="max", name="Max")
    with pytest.raises(Assistant.DoesNotExist):
        conversation_for(tenant=tenant, user="alice", assistant="max")


def test_with_several_assistants_one_must_be_named(tenant, assistant, alice):
    other = assistant_create(tenant=tenant, external_id="bea", name="Bea")
    space = space_get_or_create(end_user=alice, assistant=other)

    with pytest.raises(AssistantUnnamed):
        conversation_for(tenant=tenant, user="alice", assistant=None)
    named = conversation_for(tenant=tenant, user="alice", assistant="bea")
    assert named.assistant == other and named.space == space
    assert conversation_for(tenant=tenant, user="alice", assistant="ava").space is None


def test_a_blank_assistant_name_means_the_only_active_one_as_for_assistant_for(tenant, assistant, alice):
    assert conversation_for(tenant=tenant, user="alice", assistant="").assistant == assistant
