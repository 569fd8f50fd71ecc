"""`do_not_store`: canary values said in turns, chats, edits and derived by promotion end up in no column of any table
(every text column of every table is searched with SQL) and in no text given to the embedder."""

from __future__ import annotations

import pytest
from django.db import connection

from chat.services import reply_generate
from memory.llm import use_llm
from memory.models import KnowledgeEntry, Page, Segment
from memory.personal_data import CATEGORIES
from memory.services.audit import Actor
from memory.services.bundle_import import memory_import
from memory.services.gdpr import user_erase
from memory.services.governance import knowledge_update, profile_edit, segment_update
from memory.services.personal_data import personal_data_scan_start
from memory.services.tenancy import end_user_create
from memory.services.turns import space_get_or_create
from tests import builders
from tests.bundles import bundle_of
from tests.fakes import ScriptedLLM

CANARIES = {
    "email": ["canary.pii@example.org"],
    "phone": ["07911 123456", "07911123456"],
    "card": ["4000 0566 5566 5556", "4000056655665556"],
    "iban": ["DE89 3704 0044 0532 0130 00", "DE89370400440532013000"],
    "government_id": ["123-45-6789"],
    "secret": ["sk-proj-Canary1234567890abcdefXYZ", "hunter2canary"],
}
SAID = (
    "My email is canary.pii@example.org, my phone 07911 123456, card 4000 0566 5566 5556, "
    "IBAN DE89 3704 0044 0532 0130 00, SSN 123-45-6789, key sk-proj-Canary1234567890abcdefXYZ "
    "and my password is hunter2canary"
)
OPERATOR = Actor.system("test-operator")


def tables_holding_a_canary() -> list[str]:
    """Every (table.column) of the database whose text holds a canary, vectors aside."""
    patterns = [f"%{value}%" for values in CANARIES.values() for value in values]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'public' AND udt_name <> 'vector' ORDER BY table_name, ordinal_position"
        )
        columns = cursor.fetchall()
        found = []
        for table, column in columns:
            cursor.execute(
                f'SELECT count(*) FROM "{table}" WHERE "{column}"::text ILIKE ANY(%s)',
                [patterns],
            )
            if cursor.fetchone()[0]:
                found.append(f"{table}.{column}")
    return found


def embedded_canaries(embedder) -> list[str]:
    return [text for text in embedder.inputs for values in CANARIES.values() for v in values if v in text]


def say_it_everywhere(space, settings, django_capture_on_commit_callbacks) -> None:
    """Turns (placed into segments), an offline and an LLM chat (its page left pending: placing it would ask the
    scripted model), promotion, then edits of each item kind."""
    end_user, assistant = space.end_user, space.assistant
    settings.LLM_BASE_URL = ""
    with django_capture_on_commit_callbacks(execute=True):
        for n in range(8):
            builders.turn(space, user_message=f"{SAID}. I bake sourdough bread {n}.", assistant_reply=f"Noted: {SAID}")
        reply_generate(end_user=end_user, assistant=assistant, message=SAID, idempotency_key="offline")
    settings.LLM_BASE_URL = "http://llm.test/v1"
    with use_llm(ScriptedLLM([f"I have kept {SAID}"])), django_capture_on_commit_callbacks(execute=False):
        reply_generate(end_user=end_user, assistant=assistant, message=SAID, idempotency_key="llm")
    settings.LLM_BASE_URL = ""
    builders.segments_promote(space)
    who = {"actor": OPERATOR, "reason": "canary"}
    knowledge_update(entry=KnowledgeEntry.objects.filter(end_user=end_user).first(), text=SAID, **who)
    segment_update(segment=Segment.objects.filter(space=space).first(), summary=SAID, keywords=[SAID], **who)
    profile_edit(end_user=end_user, text=SAID, **who)


@pytest.fixture
def everything_not_stored(tenant):
    builders.personal_data_policy(tenant, **dict.fromkeys(CATEGORIES, "do_not_store"))


def test_do_not_store_leaves_no_canary_in_any_table_or_embedding_input(
    space, everything_not_stored, settings, embedder, django_capture_on_commit_callbacks
):
    say_it_everywhere(space, settings, django_capture_on_commit_callbacks)

    assert KnowledgeEntry.objects.filter(end_user=space.end_user).exists()  # promotion did write facts
    assert embedder.inputs  # and pages, facts and queries were embedded
    assert tables_holding_a_canary() == []
    assert embedded_canaries(embedder) == []


def test_a_rescan_leaves_no_canary_stored_before_the_policy_in_any_memory_table(
    tenant, space, settings, embedder, django_capture_on_commit_callbacks
):
    say_it_everywhere(space, settings, django_capture_on_commit_callbacks)
    assert tables_holding_a_canary()  # kept: the tenant had no policy yet
    builders.personal_data_policy(tenant, **dict.fromkeys(CATEGORIES, "do_not_store"))
    embedder.inputs.clear()

    with django_capture_on_commit_callbacks(execute=True):
        personal_data_scan_start(tenant=tenant, actor=OPERATOR)

    # the audit trail is hash-chained evidence and is not rewritten: the edits' before and after stay in it
    assert tables_holding_a_canary() == ["memory_auditentry.before", "memory_auditentry.after"]
    assert embedded_canaries(embedder) == []


def test_an_imported_bundle_keeps_none_of_the_tenants_do_not_store_data(
    tenant, other_tenant, everything_not_stored, embedder, django_capture_on_commit_callbacks
):
    source_user = end_user_create(tenant=other_tenant, external_id="moving")  # a tenant with no policy
    source = space_get_or_create(end_user=source_user, assistant=other_tenant.assistants.get(external_id="ava"))
    with django_capture_on_commit_callbacks(execute=True):
        builders.turns(source, messages=[f"{SAID}. I bake sourdough bread {n}." for n in range(8)])
    bundle = bundle_of(source_user)
    user_erase(end_user=source_user, actor=OPERATOR, legal_basis="moved", dry_run=False)
    assert tables_holding_a_canary() == []  # the bundle is the only copy left
    embedder.inputs.clear()

    arrived = end_user_create(tenant=tenant, external_id="arrived")
    with django_capture_on_commit_callbacks(execute=True):
        memory_import(end_user=arrived, bundle=bundle, actor=OPERATOR)

    assert Page.objects.filter(space__end_user=arrived).count() == 8
    assert tables_holding_a_canary() == []
    assert embedded_canaries(embedder) == []
