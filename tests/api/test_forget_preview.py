"""Forgetting through the API: a dry run answers what would happen and changes nothing; after a real forget, replaying
a stored answer's Idempotency-Key never returns the forgotten text."""

from __future__ import annotations

from memory.models import AuditEntry, IdempotentRequest, KnowledgeEntry, Page

SAID = "I moved to Zürich  last  spring with my partner Håkon and our two old tabby cats."


def forget(api, item: str, pk: int, body: dict, query: str = ""):
    return api.post(f"/api/v1/{item}/{pk}/forget/{query}", body, format="json")


def test_a_dry_run_answers_the_impact_and_changes_nothing(api, memory):
    preview = forget(api, "pages", memory.mtm_page.pk, {"dry_run": True})

    assert preview.status_code == 200
    body = preview.json()
    assert body["dry_run"] is True and body["impact"] == {"pages": 1, "segments": 1, "knowledge": 1}
    assert body["summary"].startswith("removes this turn")
    assert Page.objects.filter(pk=memory.mtm_page.pk).exists() and KnowledgeEntry.objects.exists()
    assert not AuditEntry.objects.filter(action="page.forget").exists()
    done = forget(api, "pages", memory.mtm_page.pk, {"reason": "The customer asked"})
    assert done.json()["forgotten"] == body["impact"]


def test_dry_run_in_the_query_string_needs_no_reason(api, memory):
    response = forget(api, "knowledge", memory.knowledge.pk, {}, "?dry_run=1")

    assert response.json()["impact"] == {"knowledge": 1}
    assert KnowledgeEntry.objects.filter(pk=memory.knowledge.pk).exists()


def test_the_forget_audit_records_the_impact(api, memory):
    forget(api, "pages", memory.mtm_page.pk, {"reason": "The customer asked"})

    detail = AuditEntry.objects.get(action="page.forget").detail
    assert detail == {"impact": {"pages": 1, "segments": 1, "knowledge": 1}}


def chat(api, message: str, key: str):
    body = {"user": "alice", "assistant": "ava", "message": message}
    return api.post("/api/v1/chat/", body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def test_replaying_a_key_after_forgetting_never_returns_the_forgotten_text(api, memory):
    chat(api, SAID, "said")
    quoting = chat(api, "Do you remember Zürich and my tabby cats?", "asked")
    assert "Håkon" in quoting.json()["reply"]
    page = Page.objects.get(user_message=SAID)

    forget(api, "pages", page.pk, {"reason": "The customer asked"})

    again = chat(api, "Do you remember Zürich and my tabby cats?", "asked")
    assert again.status_code == 200 and "Håkon" not in str(again.json())
    assert not IdempotentRequest.objects.filter(response__icontains="Håkon").exists()
