"""A do-not-store value is redacted before anything is written: what people type into the audit log (a reason, the
words of a console search, a detail), a bundle staged by the console's import dry run, and values written to slip
past a plain match (the published corpus tests/security/data/evasions.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from memory.models import AuditEntry, MemoryImport
from memory.personal_data import CATEGORIES, Detector
from memory.selectors.governance import audit_verify
from memory.services.audit import Actor, audit_record
from memory.services.governance import page_forget
from memory.services.personal_data import personal_data_policy_update, text_for_storage
from tests import builders
from tests.bundles import bundle_of

EMAIL = "ann.lee@example.co.uk"
CARD = "4111 1111 1111 1111"
CORPUS = json.loads((Path(__file__).parent / "data" / "evasions.json").read_text())["evasions"]


def do_not_store(tenant, *categories: str) -> None:
    values = dict.fromkeys(categories, "do_not_store")
    personal_data_policy_update(tenant=tenant, actor=Actor.system("test"), reason="test", **values)


def test_the_words_of_a_console_search_are_redacted_in_the_audit_log(client, tenant, agent_user, alice, assistant):
    builders.page(builders.space_of(alice, assistant), user_message="Hello", assistant_reply="Hi")
    do_not_store(tenant, "email")
    client.force_login(agent_user)

    assert client.get(f"/console/acme/users/{alice.pk}/", {"q": f"mail {EMAIL}"}).status_code == 200

    read = AuditEntry.objects.filter(action="memory.read").latest("seq")
    assert "search" in read.detail["what"] and "[email]" in read.detail["what"]
    assert EMAIL not in json.dumps(list(AuditEntry.objects.values("reason", "detail")))


def test_a_card_number_and_an_email_typed_as_a_forget_reason_are_stored_redacted(tenant, alice, assistant):
    page = builders.page(builders.space_of(alice, assistant), user_message="Hello", assistant_reply="Hi")
    do_not_store(tenant, "email", "card")

    page_forget(page=page, actor=Actor.system("test"), reason=f"asked by {EMAIL}, paid with {CARD}")

    entry = AuditEntry.objects.filter(action__contains="forget").latest("seq")
    assert entry.reason == "asked by [email], paid with [card ending 1111]"
    assert audit_verify(tenant=tenant).ok  # redacted before it was hashed


def test_text_typed_into_an_audit_detail_is_stored_redacted_and_a_hash_kept_whole(tenant):
    do_not_store(tenant, "email", "card")
    digits = "1" * 64  # made by code: never masked, whatever it looks like

    audit_record(
        tenant=tenant,
        actor=Actor.system("test"),
        action="test.typed",
        after={"note": f"write to {EMAIL}"},
        detail={"name": f"card {CARD}", "receipt_hash": digits},
    )

    entry = AuditEntry.objects.get(action="test.typed")
    assert entry.after == {"note": "write to [email]"}
    assert entry.detail == {"name": "card [card ending 1111]", "receipt_hash": digits}
    assert audit_verify(tenant=tenant).ok


def test_a_staged_import_holds_no_do_not_store_value_and_nothing_the_import_never_reads(
    client, tenant, dpo_user, alice, bob, assistant
):
    space = builders.space_of(alice, assistant)
    builders.page(space, user_message="Write to ann.lee (at) example dot com", assistant_reply="Noted.")
    bundle = bundle_of(alice)
    bundle["end_user"]["email"] = EMAIL
    bundle["audit"] = [{"action": "memory.read", "reason": f"asked by {EMAIL}"}]
    do_not_store(tenant, "email")
    client.force_login(dpo_user)

    upload = SimpleUploadedFile("export.json", json.dumps(bundle).encode())
    response = client.post(f"/console/acme/users/{bob.pk}/import/", {"bundle": upload})

    assert response.status_code == 200 and "Dry run" in response.content.decode()
    staged = json.dumps(MemoryImport.objects.get(end_user=bob, status="staged").bundle)
    assert EMAIL not in staged and "example dot com" not in staged and "[email]" in staged
    assert "audit" not in MemoryImport.objects.get(end_user=bob).bundle


@pytest.mark.parametrize("evasion", CORPUS, ids=[f"{e['category']}: {e['note']}" for e in CORPUS])
def test_the_detector_finds_a_value_written_to_evade_it(evasion):
    text, value = evasion["text"], evasion["value"]
    start = text.index(value)

    found = Detector().find(text)

    assert any(f.category == evasion["category"] and f.start <= start and f.end >= start + len(value) for f in found)


@pytest.mark.parametrize("evasion", CORPUS, ids=[f"{e['category']}: {e['note']}" for e in CORPUS])
def test_an_evasive_value_is_not_stored(tenant, evasion):
    do_not_store(tenant, *CATEGORIES)

    stored = text_for_storage(tenant=tenant, text=evasion["text"])

    before = evasion["text"][: evasion["text"].index(evasion["value"])]
    assert evasion["value"] not in stored and stored.startswith(before)  # the rest of the text is kept
