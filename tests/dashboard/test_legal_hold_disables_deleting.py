"""Under a legal hold the console's destructive buttons (forget, erase, reject and forget) are disabled, the reason
beside them: since when, placed by whom, nothing can be deleted."""

from __future__ import annotations

import re

import pytest

from memory.models import KnowledgeEntry
from memory.services.audit import Actor
from memory.services.legal_hold import legal_hold_place

REASON = "placed by dana: nothing can be deleted."


@pytest.fixture
def held(alice, alice_space):
    legal_hold_place(end_user=alice, actor=Actor("operator", "9", "dana"), reason="litigation")
    return KnowledgeEntry.objects.filter(end_user=alice).first()


def _disabled(body: str, label: str) -> bool:
    return re.search(rf"<button[^>]*disabled[^>]*>\s*{label}", body) is not None


def test_the_forget_dialog_disables_forget_and_says_why(client, supervisor_user, held):
    client.force_login(supervisor_user)

    body = client.get(f"/console/acme/act/knowledge/{held.pk}/forget/").content.decode()

    assert _disabled(body, "Forget") and REASON in body


def test_the_erasure_page_disables_erase_and_says_why(client, dpo_user, alice, held):
    client.force_login(dpo_user)

    body = client.get(f"/console/acme/users/{alice.pk}/erase/").content.decode()

    assert _disabled(body, "Erase") and REASON in body


def test_without_a_hold_the_erase_button_is_enabled(client, dpo_user, alice, alice_space):
    client.force_login(dpo_user)

    body = client.get(f"/console/acme/users/{alice.pk}/erase/").content.decode()

    assert not _disabled(body, "Erase") and REASON not in body


def test_the_rejection_dialog_disables_reject_and_forget_and_says_why(client, dpo_user, held):
    client.force_login(dpo_user)

    body = client.get(f"/console/acme/review/knowledge/{held.pk}/reject/").content.decode()

    assert _disabled(body, "Reject and forget") and REASON in body
