"""Forgetting removes exactly what was asked: the turn, what was derived from it, copies of what the user said in it
(however they were cut, re-spaced or escaped), and nothing the turn does not own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.postgres.fields import ArrayField
from django.db import models

from chat.offline_reply import OFFLINE_LABEL, _short
from memory.llm import use_llm
from memory.models import (
    AuditEntry,
    ExportJob,
    IdempotentRequest,
    JobStatus,
    KnowledgeEntry,
    Page,
    ProfileVersion,
    Segment,
)
from memory.quotes import fold
from memory.retrieval.search import retrieve
from memory.selectors.forgetting import page_forget_impact, segment_forget_impact
from memory.services.audit import Actor
from memory.services.forgetting import profile_rederive
from memory.services.gdpr_export import export_build, export_request
from memory.services.governance import knowledge_forget, knowledge_update, page_forget
from memory.text import trim
from tests import builders
from tests.builders import MINUTE, T0
from tests.fakes import ScriptedLLM

OPERATOR = Actor("operator", "1", "sam")
MARKER = (
    "My  grandmother’s recipe for Zürich  Geschnetzeltes uses exactly seventeen grams of smoked paprika, a splash "
    "of kirsch from Zug, and cream from the little dairy near Oberstrass that she cycled to every Thursday morning "
    "before the market opened, rain or shine, until she was ninety-one."
)
# Folded pieces of the marker that no other text has: the scan looks for these in every column.
MARKER_PIECES = ["seventeen grams of smoked paprika", "zurich geschnetzeltes", "dairy near oberstrass"]
TEMPLATE = "I have kept your message, so I can bring it up when it matters."
OTHER_TURNS = [
    "I started learning the cello last winter with a teacher in Basel.",
    "My brother Tomas lives in Lyon and works as a nurse at the hospital.",
    "I usually go swimming on Tuesdays at the lake before work.",
    "We adopted a grey cat named Mochi from the shelter in June.",
    "I am reading a long novel about sailors in the Baltic sea.",
    "My favourite tea is a smoky lapsang souchong with no sugar.",
    "I repaired my old bicycle and now ride it to the office daily.",
    "We are planning to paint the kitchen a pale green colour soon.",
    "I volunteer at the library on Saturday mornings sorting books.",
    "My neighbour grows enormous pumpkins in his back garden every year.",
]


def _offline_reply(quoted: str = "") -> str:
    said = f"\n- Earlier in this conversation you said: “{quoted}”" if quoted else ""
    return f"{OFFLINE_LABEL} {TEMPLATE}{said}"


def _texts_of(row: models.Model) -> list[str]:
    """Every text, JSON and array value of a row, as text (JSON both as stored and escaped)."""
    texts = []
    for field in row._meta.concrete_fields:
        value = getattr(row, field.attname)
        if value is None:
            continue
        if isinstance(field, models.JSONField | ArrayField):
            texts += [json.dumps(value, ensure_ascii=False), json.dumps(value)]
        elif isinstance(field, models.CharField | models.TextField):
            texts.append(value)
    return texts


def _holding_the_marker() -> list[str]:
    """Every column of every memory table (and every stored response) in which a piece of the marker remains."""
    found = []
    for model in apps.get_app_config("memory").get_models():
        for row in model.objects.all():
            for text in _texts_of(row):
                if any(piece in fold(text).text for piece in MARKER_PIECES):
                    found.append(f"{model.__name__} {row.pk}")
    return found


@pytest.fixture
def remembered(space, settings, django_capture_on_commit_callbacks, tmp_path):
    """The marker said once, quoted by later replies (cut at 180 characters, re-spaced), by a stored API answer
    (JSON-escaped), placed into chains and topics and promoted into facts and the profile; ten other turns whose
    replies carry the offline template sentence; an export built after all that."""
    settings.MEMORY_STM_CAPACITY = 1
    settings.MEMORY_CONTINUITY_THRESHOLD = 0.0  # one dialogue chain: every chain summary rolls over the marker
    settings.EXPORT_DIR = tmp_path / "exports"
    at = iter(T0 + i * MINUTE for i in range(100))
    with django_capture_on_commit_callbacks(execute=True):
        marker = builders.turn(space, user_message=MARKER, assistant_reply=_offline_reply(), at=next(at)).page
        for text in OTHER_TURNS:
            builders.turn(space, user_message=text, assistant_reply=_offline_reply(), at=next(at))
        for question in ("What was the recipe again?", "Tell me about grandmother", "And the paprika amount?"):
            builders.turn(space, user_message=question, assistant_reply=_offline_reply(_short(MARKER)), at=next(at))
        builders.turn(space, user_message="Thanks.", assistant_reply="You are welcome.", at=next(at))
    builders.segments_promote(space)
    escaped = json.dumps({"text": trim(" ".join(MARKER.split()), 200)})
    builders.idempotent_request(
        space.end_user,
        key="chat-1",
        endpoint="chat",
        response={"reply": _offline_reply(_short(MARKER)), "raw": escaped},
    )
    builders.idempotent_request(space.end_user, key="chat-2", endpoint="chat", response={"reply": "Unrelated."})
    job = export_request(end_user=space.end_user, actor=OPERATOR)
    export_build(job_id=job.pk)
    assert _holding_the_marker(), "the arrangement must spread the marker before it is forgotten"
    return Page.objects.get(pk=marker.pk)


def _template_replies() -> dict[int, str]:
    return dict(Page.objects.filter(assistant_reply__contains=TEMPLATE).values_list("pk", "assistant_reply"))


def test_forgetting_a_turn_leaves_its_words_nowhere_and_the_template_everywhere(
    space, remembered, django_capture_on_commit_callbacks
):
    before = _template_replies()
    export = ExportJob.objects.get()

    with django_capture_on_commit_callbacks(execute=True):
        page_forget(page=remembered, actor=OPERATOR, reason="the user asked")

    assert _holding_the_marker() == []
    after = _template_replies()
    untouched = [pk for pk, reply in before.items() if "Earlier" not in reply and pk != remembered.pk]
    assert len(untouched) == 10
    assert all(after[pk] == before[pk] for pk in untouched)
    assert set(after) == set(before) - {remembered.pk}  # the quoting replies keep the template sentence too
    export.refresh_from_db()
    assert export.status == JobStatus.EXPIRED and not Path(export.file_path).exists()
    assert list(IdempotentRequest.objects.values_list("key", flat=True)) == ["chat-2"]


def test_forgetting_a_turn_redacts_only_the_quote_in_later_replies(space, remembered):
    page_forget(page=remembered, actor=OPERATOR, reason="the user asked")

    quoting = Page.objects.filter(assistant_reply__contains="Earlier in this conversation")
    assert quoting.count() == 3
    assert all(p.assistant_reply == _offline_reply("[forgotten]") for p in quoting)


def test_the_impact_preview_changes_nothing_and_matches_what_forgetting_does(space, remembered):
    pages, facts = Page.objects.count(), KnowledgeEntry.objects.count()

    preview = page_forget_impact(page=remembered)

    assert (Page.objects.count(), KnowledgeEntry.objects.count()) == (pages, facts)
    assert preview.pages == 1 and preview.knowledge >= 1 and preview.turns_redacted == 3
    assert preview.stored_responses == 1 and preview.exports_expired == 1 and preview.profile_rederived >= 1
    done = page_forget(page=remembered, actor=OPERATOR, reason="the user asked")
    assert done == preview
    assert AuditEntry.objects.get(action="page.forget").detail == {"impact": preview.as_detail()}
    assert "removes this turn" in preview.describe("page") and "redacts quotes in 3 later replies" in (
        preview.describe("page")
    )


def test_forgetting_one_page_of_a_segment_removes_only_the_facts_learnt_from_it(space):
    segment = builders.segment_with_pages(
        space,
        summary="Home life",
        messages=[
            "I have a golden retriever called Pepper who loves the beach.",
            "My sister Ines moved to Porto last year for her new job.",
            "I am allergic to peanuts and always carry my EpiPen with me.",
        ],
        l_interaction=builders.HOT,
    )
    builders.segments_promote(space)
    facts = dict(KnowledgeEntry.objects.values_list("text", "pk"))
    assert len(facts) == 3
    sister = Page.objects.get(user_message__contains="Ines")

    impact = page_forget(page=sister, actor=OPERATOR, reason="the user asked")

    left = list(KnowledgeEntry.objects.values_list("text", flat=True))
    assert impact.knowledge == 1 and len(left) == 2
    assert not any("Ines" in text for text in left)
    assert Segment.objects.get(pk=segment.pk).pages.count() == 2
    profile = ProfileVersion.objects.get().text
    assert "Ines" not in profile and "Pepper" in profile and "EpiPen" in profile


def test_a_sentence_the_user_also_said_in_another_turn_is_not_redacted_there(space):
    said_twice = "I will be travelling to Vienna for the conference next week."
    forgotten = builders.page(space, user_message=said_twice, at=T0)
    kept = builders.page(space, user_message=said_twice, assistant_reply="Enjoy Vienna.", at=T0 + MINUTE)
    quoting = builders.page(
        space, user_message="Where am I going?", assistant_reply=f"You said: {said_twice}", at=T0 + 2 * MINUTE
    )

    page_forget(page=forgotten, actor=OPERATOR, reason="the user asked")

    kept.refresh_from_db()
    quoting.refresh_from_db()
    assert kept.user_message == said_twice and quoting.assistant_reply == f"You said: {said_twice}"


def test_forgetting_a_segment_is_previewed_like_it_is_done(space):
    segment = builders.segment_with_pages(
        space, summary="Cooking", messages=["I bake rye bread every Sunday for my family."], l_interaction=9
    )
    builders.segments_promote(space)
    preview = segment_forget_impact(segment=segment)
    assert (preview.pages, preview.segments, preview.knowledge) == (1, 1, 1)


def test_correcting_a_fact_reaches_the_profile(space):
    builders.segment_with_pages(
        space, summary="Work", messages=["I work as a product manager at a bank in Zurich."], l_interaction=9
    )
    builders.segments_promote(space)
    fact = KnowledgeEntry.objects.get()

    knowledge_update(entry=fact, text="The user works as a designer in Geneva.", actor=OPERATOR, reason="corrected")

    current = ProfileVersion.objects.order_by("-number").first()
    assert "designer in Geneva" in current.text and "product manager" not in current.text


def test_forgetting_a_fact_rederives_the_profile_without_it(space):
    builders.segment_with_pages(
        space,
        summary="Hobbies",
        messages=["I play chess online every evening after dinner.", "I grow tomatoes on my small balcony."],
        l_interaction=9,
    )
    builders.segments_promote(space)
    chess = KnowledgeEntry.objects.get(text__contains="chess")

    impact = knowledge_forget(entry=chess, actor=OPERATOR, reason="wrong")

    profile = ProfileVersion.objects.get().text
    assert impact.profile_rederived == 1 and "chess" not in profile and "tomatoes" in profile


def test_with_a_model_the_profile_is_withheld_until_the_worker_rederives_it(space, settings):
    builders.segment_with_pages(
        space,
        summary="Pets",
        messages=["I have two rabbits called Salt and Pepper.", "I go climbing at the gym on Fridays."],
        l_interaction=9,
    )
    builders.segments_promote(space)
    settings.LLM_BASE_URL = "http://llm.invalid/v1"
    rabbits = Page.objects.get(user_message__contains="rabbits")

    impact = page_forget(page=rabbits, actor=OPERATOR, reason="the user asked")

    current = ProfileVersion.objects.order_by("-number").first()
    assert impact.profile_rederived == 1 and current.stale and "rabbits" not in current.text
    assert retrieve(space=space, query="climbing").profile is None
    with use_llm(ScriptedLLM([json.dumps({"profile": "The user climbs at the gym on Fridays."})])):
        profile_rederive(end_user_id=space.end_user_id)
    newest = ProfileVersion.objects.order_by("-number").first()
    assert newest.text == "The user climbs at the gym on Fridays." and not newest.stale
    assert retrieve(space=space, query="climbing").profile == newest


def test_forgetting_the_first_turn_of_a_chain_relinks_the_rest(space, settings, django_capture_on_commit_callbacks):
    settings.MEMORY_STM_CAPACITY = 1
    settings.MEMORY_CONTINUITY_THRESHOLD = 0.0
    with django_capture_on_commit_callbacks(execute=True):
        for i in range(5):
            builders.turn(space, user_message=f"Rose number {i} in my garden is flowering.", at=T0 + i * MINUTE)
    placed = list(Page.objects.exclude(segment=None).order_by("seq"))
    assert len(placed) == 4 and {p.chain_head_id for p in placed} == {placed[0].pk}

    page_forget(page=placed[0], actor=OPERATOR, reason="the user asked")

    remaining = list(Page.objects.exclude(segment=None).order_by("seq"))
    assert {p.chain_head_id for p in remaining} == {remaining[0].pk}
    assert [p.prev_page_id for p in remaining] == [None, remaining[0].pk, remaining[1].pk]
    assert all("Rose number 0" not in p.chain_summary for p in remaining)


def test_a_redacted_turn_is_embedded_again_from_its_redacted_text(space, embedder):
    segment = builders.segment(space, summary="Recipes")
    forgotten = builders.page(space, user_message=MARKER, segment=segment, topic_summary="Recipe.")
    later = builders.page(
        space,
        user_message="What was it?",
        assistant_reply=f"You said: {_short(MARKER)}",
        at=T0 + MINUTE,
        segment=segment,
        topic_summary="A question about a recipe.",
    )

    page_forget(page=forgotten, actor=OPERATOR, reason="the user asked")

    later.refresh_from_db()
    assert later.assistant_reply == "You said: [forgotten]"
    assert builders.same_page_vector(later.embedding, embedder.embed([later.text])[0])


def test_with_a_model_a_correction_marks_the_profile_stale_and_queues_its_rederivation(
    space, settings, django_capture_on_commit_callbacks
):
    builders.segment_with_pages(space, summary="Work", messages=["I work as a nurse in Leeds."], l_interaction=9)
    builders.segments_promote(space)
    settings.LLM_BASE_URL = "http://llm.invalid/v1"
    fact = KnowledgeEntry.objects.get()

    with django_capture_on_commit_callbacks() as queued:
        knowledge_update(entry=fact, text="The user works as a midwife in York.", actor=OPERATOR, reason="corrected")

    assert ProfileVersion.objects.get().stale and len(queued) == 1
    assert retrieve(space=space, query="work").profile is None
