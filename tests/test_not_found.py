"""A miss reads the same in every interface: the console, the API and the integrations word a selector's DoesNotExist
from one map (memory.not_found), each with its own status code."""

from __future__ import annotations

import pytest
from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404
from rest_framework.exceptions import NotFound

from api.views.base import get_or_not_found
from dashboard.console import get_or_404
from integrations.errors import Problem, problem_of
from memory.items import ITEM_KINDS
from memory.models import EndUser, Escalation
from memory.not_found import not_found_message
from memory.selectors.people import end_user_get


def test_the_console_the_api_and_the_integrations_word_a_missing_user_alike(alice, stranger):
    with pytest.raises(Http404, match=r"^No such user\.$"):
        get_or_404(end_user_get, tenant=alice.tenant, id=stranger.pk)
    with pytest.raises(NotFound) as api_miss:
        get_or_not_found(end_user_get, tenant=alice.tenant, external_id=stranger.external_id)

    assert str(api_miss.value.detail) == "No such user."
    assert problem_of(EndUser.DoesNotExist()) == Problem(404, "not_found", "No such user.")


def test_each_memory_item_kind_is_named_by_its_registry_label():
    for kind in ITEM_KINDS.values():
        assert not_found_message(kind.model.DoesNotExist()) == f"No such {kind.label}."


def test_a_miss_is_worded_from_the_exception_or_its_class_and_an_unlisted_one_is_an_object():
    assert not_found_message(Escalation.DoesNotExist()) == not_found_message(Escalation.DoesNotExist)
    assert not_found_message(Escalation.DoesNotExist) == "No such escalation."
    assert not_found_message(ObjectDoesNotExist()) == "No such object."
