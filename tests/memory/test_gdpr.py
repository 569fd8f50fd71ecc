"""GDPR: the export holds every tier; erasure leaves no trace of the user in any text column, and a receipt."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from memory.models import AuditEntry, EndUser, ErasureReceipt, MemorySpace, Page, ProfileVersion
from memory.selectors.gdpr import user_export_data
from memory.selectors.governance import audit_verify
from memory.services.audit import Actor
from memory.services.gdpr import receipt_verify, user_erase
from memory.services.governance import knowledge_update, memory_flag_set, profile_edit
from tests import builders

MARKER = "zq7marker"
DPO = Actor("operator", "9", "dana")


@pytest.fixture
def marked(db, django_capture_on_commit_callbacks, client):
    """An end user with the marker in every kind of memory, a login session, and an audited edit."""
    end_user = builders.end_user(
        external_id=f"user-{MARKER}",
        display_name=f"Name {MARKER}",
        email=f"{MARKER}@example.com",
        username=f"login-{MARKER}",
        password="pw-long-enough-1",
    )
    space = builders.space_of(end_user)
    with django_capture_on_commit_callbacks(execute=True):
        builders.turns(
            space, messages=[f"I keep my {MARKER} notebook in the kitchen drawer, page {i}." for i in range(16)]
        )
    builders.segments_promote(space)
    fact = builders.knowledge(end_user, text=f"fact {MARKER}")
    knowledge_update(entry=fact, text=f"edited fact {MARKER}", actor=DPO, reason=f"because {MARKER}")
    memory_flag_set(item=fact, flag="pinned", value=True, actor=DPO, reason="keep")
    profile_edit(end_user=end_user, text=f"Profile {MARKER}", actor=DPO, reason="r")
    builders.reply(space, user_message=f"hello {MARKER}")
    builders.idempotent_request(end_user, response={"m": MARKER})
    client.force_login(end_user.account)
    return space


def test_the_export_holds_every_tier_heat_history_profile_knowledge_pins_and_audit(marked):
    data = user_export_data(end_user=marked.end_user)
    json.dumps(data)  # JSON-ready
    memory = data["memory"][0]
    assert len(memory["pages"]) == 16
    assert memory["segments"] and memory["segments"][0]["heat_history"]
    assert any(p["tier"] == "stm" for p in memory["pages"]) and any(p["tier"] == "mtm" for p in memory["pages"])
    assert [v["text"] for v in data["profile_versions"]][-1] == f"Profile {MARKER}"
    assert any(k["pinned"] and k["text"] == f"edited fact {MARKER}" for k in data["knowledge"])
    assert {a["action"] for a in data["audit"]} >= {"knowledge.edit", "knowledge.pin", "profile.edit"}
    assert memory["replies"][0]["user_message"] == f"hello {MARKER}"


def test_a_dry_run_counts_per_table_and_deletes_nothing(marked):
    erasure = user_erase(end_user=marked.end_user, actor=DPO, legal_basis="GDPR Art. 17", dry_run=True)
    assert erasure.receipt is None
    assert erasure.counts["memory_page"] == 16 and erasure.counts["memory_enduser"] == 1
    assert erasure.counts["auth_user"] == 1 and erasure.counts["django_session"] == 1
    assert Page.objects.count() == 16


def text_columns() -> list[tuple[str, str]]:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT table_name, column_name FROM information_schema.columns
            WHERE table_schema = 'public'
              AND (data_type IN ('text', 'character varying', 'jsonb', 'json', 'ARRAY'))
            """
        )
        return cursor.fetchall()


def marker_hits() -> list[str]:
    hits = []
    with connection.cursor() as cursor:
        for table, column in text_columns():
            cursor.execute(f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE %s', [f"%{MARKER}%"])
            if cursor.fetchone()[0]:
                hits.append(f"{table}.{column}")
    # sessions are encoded: decode them to look inside
    from django.contrib.sessions.models import Session

    hits += [f"django_session {s.pk}" for s in Session.objects.all() if MARKER in json.dumps(s.get_decoded())]
    return hits


def test_erasure_leaves_no_trace_in_any_text_column_and_a_receipt_that_verifies(marked):
    assert marker_hits(), "the marker must be somewhere before erasure"
    tenant = marked.tenant
    erasure = user_erase(end_user=marked.end_user, actor=DPO, legal_basis="GDPR Art. 17(1)(a)", dry_run=False)
    assert marker_hits() == []
    assert not MemorySpace.objects.exists() and not EndUser.objects.exists() and not Page.objects.exists()
    assert not ProfileVersion.objects.exists() and not get_user_model().objects.exists()
    receipt = ErasureReceipt.objects.get()
    assert receipt == erasure.receipt and receipt.counts["memory_page"] == 16
    assert receipt_verify(receipt)
    assert AuditEntry.objects.filter(subject_id=receipt.subject_id, erased=True).count() >= 3
    assert AuditEntry.objects.filter(action="gdpr.erasure").exists()
    assert audit_verify(tenant=tenant).ok


def test_erasure_needs_a_legal_basis(marked):
    with pytest.raises(ValueError, match="legal basis"):
        user_erase(end_user=marked.end_user, actor=DPO, legal_basis=" ", dry_run=False)
    assert EndUser.objects.exists()


def test_erasing_one_user_leaves_another_untouched(marked):
    other = builders.space_of(builders.end_user(external_id="bystander"))
    builders.turns(other, messages=["I like tea."])
    user_erase(end_user=marked.end_user, actor=DPO, legal_basis="GDPR Art. 17", dry_run=False)
    assert Page.objects.filter(space=other).count() == 1
