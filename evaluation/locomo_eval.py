"""The LoCoMo harness: replay conversations through the real pipeline, ask every question of each system, score.

Systems, each ranking the conversation's pages for a question:
- `memoryos`: `memory.retrieval.search.retrieve` with the product's pipeline (record_visits=False, so asking never
  changes memory): its fused ranking of every page of the space (`RetrievalResult.ranked`), STM pages included (the
  harness gives STM pages their vectors, computed with the same embedder, so they compete like the rest).
  MEMORY_RETRIEVE_PAGES is raised to the curve's largest k for the run, so recall@k for k ≤ 20 reads one list.
- `memoryos_paper`: the published pipeline (`memory.retrieval.config.PAPER`: top m segments, then their pages by
  cosine); its MTM pages and its STM pages (the last turns, always in MemoryOS's prompt) are merged by cosine.
- variants for ablations: `memoryos:<stage>=<value>:…` changes stages of the product's pipeline
  (`memory.retrieval.config.RetrievalConfig`), e.g. `memoryos:lexical=off` or `memoryos:segment_prior=0`.
- `flat_rag`: top pages by cosine over every page of the conversation (numpy over the stored page vectors).
- `full_context`: every page; no retrieval, so its recall is the ceiling (the evidence that reached storage).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter

import numpy as np
from django.conf import settings
from django.db.models import Sum
from django.utils import timezone
from tqdm import tqdm

from evaluation import locomo, scoring
from evaluation.answering import (
    OFFLINE_LABEL,
    Answer,
    ExtractiveAnswerer,
    LLMAnswerer,
    MemoryContext,
    Speakers,
)
from evaluation.scope import celery_eager, settings_changed
from memory.embeddings import Embedder, use_embedder
from memory.models import MemoryEvent, MemorySpace, Page, Segment, Tenant
from memory.models.tiers import PageSource, Tier
from memory.retrieval.config import DEFAULT, PAPER, RetrievalConfig
from memory.retrieval.result import RetrievalResult
from memory.retrieval.search import retrieve
from memory.services.embedding_state import embedder_for_store
from memory.services.passages import page_passages_set, page_vectors_embed
from memory.services.tenancy import assistant_create, end_user_create, tenant_create
from memory.services.turns import space_get_or_create, turn_record
from memory.services.updating import space_pending_place

SYSTEMS = ("memoryos", "memoryos_paper", "flat_rag", "full_context")
DEFAULT_SYSTEMS = ("memoryos", "flat_rag", "full_context")
UNRANKED_SYSTEMS = ("full_context",)
CURVE_MAX_K = 20
LLM_MODES = ("offline", "openai")


class EvaluationError(ValueError):
    """The options or the data cannot give a run; the message says why."""


@dataclass
class EvalOptions:
    data: Path
    conversations: list[str] | None = None  # sample ids; None: every conversation in the file
    systems: tuple[str, ...] = DEFAULT_SYSTEMS
    k: int = 10
    llm: str = "offline"
    answer: bool = False
    tenant_slug: str = ""  # empty: locomo-<timestamp>
    reuse: bool = False  # score again on the tenant `tenant_slug` ingested by an earlier run: no ingestion
    progress: bool | None = None  # None: a progress bar only on a terminal


@dataclass
class Conversation:
    """One ingested conversation and what its questions need: pages, their vectors, the reader."""

    sample_id: str
    space: MemorySpace
    speakers: Speakers
    pages: list[Page]
    vectors: np.ndarray  # row i is the vector of pages[i]
    reader: ExtractiveAnswerer | LLMAnswerer
    index: dict[int, int] = field(default_factory=dict)  # page id → row


@dataclass
class Ranked:
    pages: list[Page]
    scores: list[float]
    retrieval_ms: float
    retrieval: RetrievalResult | None = None  # memoryos: everything retrieve() returned


# --- the run -----------------------------------------------------------------------------------------------------


def locomo_evaluate(options: EvalOptions) -> dict:
    """Ingest the chosen conversations into a fresh tenant, evaluate each system, return the results document.

    Side effects: creates the tenant (one end user and one assistant per conversation) and its memory; runs the
    updating tasks in-process (Celery eager) so every evicted page is placed before questions are asked. Offline
    mode hides LLM_BASE_URL for the run, so updating uses the offline steps too.
    """
    _check(options)
    started = perf_counter()
    samples = _samples(options)
    with _run_settings(options), celery_eager():
        embedder = embedder_for_store()
        if options.reuse:
            tenant = _kept_tenant(options.tenant_slug)
            conversations = _kept_conversations(tenant, samples, options, embedder)
        else:
            tenant = _fresh_tenant(options.tenant_slug)
            conversations = _ingest_all(tenant, samples, options, embedder)
        ingest_seconds = perf_counter() - started
        with use_embedder(QuestionMemo(embedder)) as memo:
            records = _ask_all(samples, conversations, options, memo)
    return _document(options, tenant, samples, records, ingest_seconds, perf_counter() - started, embedder)


def system_config(system: str) -> RetrievalConfig | None:
    """The retrieval pipeline a memoryos system names ("memoryos:lexical=off:segment_prior=0.2"); None for the
    baselines. Raises EvaluationError for an unknown system, stage or value."""
    base, *changes = system.split(":")
    if base not in SYSTEMS or (changes and base != "memoryos"):
        choices = f"{', '.join(SYSTEMS)} or memoryos:<stage>=<value>"
        raise EvaluationError(f"unknown systems [{system!r}]; choose from {choices}")
    if base not in ("memoryos", "memoryos_paper"):
        return None
    config = PAPER if base == "memoryos_paper" else DEFAULT
    stages = {f.name: f.type for f in dataclasses.fields(RetrievalConfig)}
    for change in changes:
        name, _, value = change.partition("=")
        if name not in stages or not value:
            raise EvaluationError(f"unknown stage in {system!r}; stages: {', '.join(stages)}")
        parsed = float(value) if stages[name] == "float" else value.lower() in ("on", "1", "true", "yes")
        config = dataclasses.replace(config, **{name: parsed})
    return config


def _check(options: EvalOptions) -> None:
    if not options.systems:
        raise EvaluationError(f"choose systems from {', '.join(SYSTEMS)}")
    for system in options.systems:
        system_config(system)
    if options.reuse and not options.tenant_slug:
        raise EvaluationError("--reuse needs --tenant, the slug of an ingested tenant")
    if options.llm not in LLM_MODES:
        raise EvaluationError(f"--llm must be one of {', '.join(LLM_MODES)}, not {options.llm!r}")
    if not 1 <= options.k <= CURVE_MAX_K:
        raise EvaluationError(f"--k must be between 1 and {CURVE_MAX_K}")
    if options.llm == "openai" and not settings.LLM_BASE_URL:
        raise EvaluationError("--llm openai needs LLM_BASE_URL (and LLM_API_KEY, LLM_MODEL) to be set")


def _samples(options: EvalOptions) -> list[dict]:
    try:
        samples = locomo.load(options.data)
    except FileNotFoundError:
        raise EvaluationError(f"no LoCoMo file at {options.data}") from None
    if options.conversations:
        by_id = {s.get("sample_id"): s for s in samples}
        missing = [c for c in options.conversations if c not in by_id]
        if missing:
            raise EvaluationError(f"conversations not in {options.data}: {', '.join(missing)}")
        samples = [by_id[c] for c in options.conversations]
    return samples


@contextlib.contextmanager
def _run_settings(options: EvalOptions) -> Iterator[None]:
    """Retrieval returns enough pages for the recall curve; offline mode also means offline updating steps."""
    overrides: dict = {"MEMORY_RETRIEVE_PAGES": CURVE_MAX_K}
    if options.llm == "offline":
        overrides["LLM_BASE_URL"] = ""
    with settings_changed(**overrides):
        yield


def _fresh_tenant(slug: str) -> Tenant:
    slug = slug or f"locomo-{timezone.now():%Y%m%d-%H%M%S}"
    if Tenant.objects.filter(slug=slug).exists():
        raise EvaluationError(f"tenant {slug!r} already exists; every run needs a fresh tenant (--tenant)")
    return tenant_create(slug=slug, name=f"LoCoMo evaluation {slug}")


def _kept_tenant(slug: str) -> Tenant:
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise EvaluationError(f"no tenant {slug!r} to reuse; run once without --reuse to ingest it")
    return tenant


def _kept_conversations(tenant: Tenant, samples: list[dict], options: EvalOptions, embedder: Embedder) -> dict:
    """The conversations an earlier run ingested into `tenant`, found by their end user's external id."""
    conversations = {}
    for sample in samples:
        sample_id = sample["sample_id"]
        space = MemorySpace.objects.filter(tenant=tenant, end_user__external_id=sample_id).first()
        if space is None:
            raise EvaluationError(f"tenant {tenant.slug!r} holds no conversation {sample_id}")
        conversations[sample_id] = _conversation(sample, space, options, embedder)
    return conversations


def _bar(options: EvalOptions, total: int, desc: str, unit: str) -> tqdm:
    disable = None if options.progress is None else not options.progress
    return tqdm(total=total, desc=desc, unit=unit, disable=disable, dynamic_ncols=True)


# --- ingestion ---------------------------------------------------------------------------------------------------


def conversation_ingest(*, tenant: Tenant, sample: dict, on_turn=None) -> MemorySpace:
    """Replay one LoCoMo conversation through `turn_record`: speaker_a is the end user, speaker_b the assistant.

    Each page keeps its dia_ids and session in `source_meta`. With Celery eager, updating runs after each turn.
    """
    conversation, sample_id = sample["conversation"], sample["sample_id"]
    end_user = end_user_create(tenant=tenant, external_id=sample_id, display_name=conversation["speaker_a"])
    assistant = assistant_create(tenant=tenant, external_id=f"{sample_id}-b", name=conversation["speaker_b"])
    for turn in locomo.conversation_turns(conversation):
        turn_record(
            end_user=end_user,
            assistant=assistant,
            user_message=turn.user_message,
            assistant_reply=turn.assistant_reply,
            at=turn.at,
            source=PageSource.IMPORT,
            source_ref=f"locomo:{sample_id}",
            source_meta={"dia_ids": turn.dia_ids, "session": turn.session},
        )
        if on_turn:
            on_turn(turn)
    space = space_get_or_create(end_user=end_user, assistant=assistant)
    space_pending_place(space_id=space.id)  # the last pages that left STM, short of a placement batch
    return space


def input_turns(sample: dict) -> int:
    """The utterances of a conversation (LoCoMo's "turns"): every entry of every session list."""
    conversation = sample["conversation"]
    return sum(len(v) for k, v in conversation.items() if locomo.SESSION_KEY.match(k) and isinstance(v, list))


def _ingest_all(tenant: Tenant, samples: list[dict], options: EvalOptions, embedder: Embedder) -> dict:
    conversations = {}
    with _bar(options, sum(input_turns(s) for s in samples), "ingest", "turn") as bar:
        for sample in samples:
            bar.set_postfix_str(sample["sample_id"])
            space = conversation_ingest(tenant=tenant, sample=sample, on_turn=lambda t: bar.update(len(t.dia_ids)))
            conversations[sample["sample_id"]] = _conversation(sample, space, options, embedder)
    return conversations


def _conversation(sample: dict, space: MemorySpace, options: EvalOptions, embedder: Embedder) -> Conversation:
    """The stored pages in order, with vectors. STM pages are not embedded until they leave STM: embed them here
    (their passages too) and store the vectors, so that retrieval's vector channel ranks them like every other
    page."""
    pages = list(Page.objects.filter(space=space).order_by("seq"))
    missing = [p for p in pages if p.embedding is None]
    embedded = page_vectors_embed(embedder=embedder, texts=[p.memory_text for p in missing])
    computed = {p.id: vectors.vector for p, vectors in zip(missing, embedded, strict=True)}
    for page_id, vector in computed.items():
        Page.objects.filter(pk=page_id).update(embedding=vector)  # an evaluation tenant, after ingestion
    page_passages_set(pages=missing, vectors=embedded)  # a long STM page is found by its passages too
    vectors = np.array([computed[p.id] if p.embedding is None else p.embedding for p in pages], dtype=np.float32)
    conversation = sample["conversation"]
    speakers = Speakers(user=conversation["speaker_a"], assistant=conversation["speaker_b"])
    reader = ExtractiveAnswerer(pages, speakers) if options.llm == "offline" else LLMAnswerer(speakers)
    index = {p.id: row for row, p in enumerate(pages)}
    return Conversation(sample["sample_id"], space, speakers, pages, vectors, reader, index)


# --- questions ---------------------------------------------------------------------------------------------------


class QuestionMemo:
    """The store's embedder, remembering the one text it embedded last, so that a question is embedded once: by
    the harness (timed, and used by flat_rag), then again inside retrieve(), which gets the same vector back."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dimension = inner, inner.name, inner.dimension
        self._last: tuple[str, np.ndarray] | None = None

    def embed(self, texts: list[str]) -> np.ndarray:
        if len(texts) == 1 and self._last is not None and self._last[0] == texts[0]:
            return self._last[1][None, :]
        vectors = self.inner.embed(texts)
        if len(texts) == 1:
            self._last = (texts[0], vectors[0])
        return vectors


def _ask_all(samples: list[dict], conversations: dict, options: EvalOptions, embedder: Embedder) -> list[dict]:
    records = []
    with _bar(options, sum(len(s.get("qa", [])) for s in samples), "questions", "q") as bar:
        for sample in samples:
            conversation = conversations[sample["sample_id"]]
            for number, qa in enumerate(sample.get("qa", [])):
                records.append(_ask(conversation, number, qa, options, embedder))
                bar.update(1)
    return records


def _ask(conversation: Conversation, number: int, qa: dict, options: EvalOptions, embedder: Embedder) -> dict:
    question, category = str(qa["question"]), int(qa["category"])
    evidence = scoring.evidence_ids(qa.get("evidence", []))
    gold = scoring.answer_text(qa)
    started = perf_counter()
    vector = embedder.embed([question])[0]
    embed_ms = (perf_counter() - started) * 1000
    record = {
        "id": f"{conversation.sample_id}:q{number}",
        "conversation": conversation.sample_id,
        "category": category,
        "question": question,
        "answer": gold,
        "evidence": evidence,
        "embed_ms": round(embed_ms, 3),
        "systems": {},
    }
    for system in options.systems:
        ranked = _rank(system, conversation, question, vector, embed_ms)
        result = _retrieval_record(system, ranked, evidence, options.k)
        if options.answer:
            context = _context(system, ranked, options.k)
            result.update(_answer_record(conversation, question, gold, category, context))
        record["systems"][system] = result
    return record


def _rank(system: str, conversation: Conversation, question: str, vector: np.ndarray, embed_ms: float) -> Ranked:
    config = system_config(system)
    if config is None:
        return RANKERS[system](conversation, question, vector, embed_ms)
    if config.segment_gate:
        return _rank_paper(conversation, question, vector, embed_ms, config)
    started = perf_counter()
    result = retrieve(space=conversation.space, query=question, record_visits=False, config=config)
    ranked = result.ranked[:CURVE_MAX_K]
    elapsed = embed_ms + (perf_counter() - started) * 1000
    return Ranked([p.page for p in ranked], [p.fused for p in ranked], elapsed, result)


def _rank_paper(
    conversation: Conversation, question: str, vector: np.ndarray, embed_ms: float, config: RetrievalConfig
) -> Ranked:
    started = perf_counter()
    result = retrieve(space=conversation.space, query=question, record_visits=False, config=config)  # vector: memo
    stm = [(float(conversation.vectors[conversation.index[p.id]] @ vector), 1, p) for p in result.short_term]
    mtm = [(scored.score, 0, scored.page) for scored in result.pages]
    merged = sorted(mtm + stm, key=lambda c: (-c[0], c[1]))[:CURVE_MAX_K]
    elapsed = embed_ms + (perf_counter() - started) * 1000
    return Ranked([page for _, _, page in merged], [score for score, _, _ in merged], elapsed, result)


def _rank_flat(conversation: Conversation, question: str, vector: np.ndarray, embed_ms: float) -> Ranked:
    started = perf_counter()
    scores = conversation.vectors @ vector
    top = np.argsort(-scores, kind="stable")[:CURVE_MAX_K]
    elapsed = embed_ms + (perf_counter() - started) * 1000
    return Ranked([conversation.pages[i] for i in top], [float(scores[i]) for i in top], elapsed)


def _rank_full(conversation: Conversation, question: str, vector: np.ndarray, embed_ms: float) -> Ranked:
    return Ranked(conversation.pages, [], 0.0)


RANKERS = {"flat_rag": _rank_flat, "full_context": _rank_full}


def _dia_ids(page: Page) -> list[str]:
    return list((page.source_meta or {}).get("dia_ids", []))


def _retrieval_record(system: str, ranked: Ranked, evidence: list[str], k: int) -> dict:
    dia_ids = [_dia_ids(p) for p in ranked.pages]
    if system in UNRANKED_SYSTEMS:
        return {"recall_at_k": scoring.recall_at_k(evidence, dia_ids, len(dia_ids)), "retrieved": "all"}
    return {
        "retrieved": [
            {"page": p.id, "tier": p.tier, "score": round(s, 4), "dia_ids": ids}
            for p, s, ids in zip(ranked.pages, ranked.scores, dia_ids, strict=True)
        ],
        "recall_at_k": scoring.recall_at_k(evidence, dia_ids, k),
        "recall_curve": scoring.recall_curve(evidence, dia_ids, CURVE_MAX_K),
        "retrieval_ms": round(ranked.retrieval_ms, 3),
    }


def _context(system: str, ranked: Ranked, k: int) -> MemoryContext:
    """What the reader sees. MemoryOS: what its prompt holds (top-k MTM pages, STM, profile, knowledge);
    flat_rag: its top k pages; full_context: every page."""
    if system == "full_context":
        return MemoryContext(pages=ranked.pages)
    result = ranked.retrieval
    if result is None:
        return MemoryContext(pages=ranked.pages[:k])
    knowledge = [scored.entry.text for scored in [*result.user_knowledge, *result.assistant_knowledge]]
    knowledge += [entry.text for entry in result.pinned_knowledge if entry.text not in knowledge]
    return MemoryContext(
        pages=[scored.page for scored in result.pages][:k],
        short_term=list(result.short_term),
        profile=result.profile.text if result.profile else "",
        knowledge=knowledge,
    )


def _answer_record(conversation: Conversation, question: str, gold: str, category: int, context: MemoryContext) -> dict:
    started = perf_counter()
    answer: Answer = conversation.reader.answer(question, context)
    scored = category != scoring.ADVERSARIAL
    return {
        "prediction": answer.text,
        "f1": scoring.f1_set(answer.text, gold) if scored else None,
        "f1_locomo": scoring.f1_locomo(answer.text, gold, category),
        "bleu1": scoring.bleu1(answer.text, gold) if scored else None,
        "llm_calls": answer.llm_calls,
        "prompt_tokens": answer.prompt_tokens,
        "context_tokens": answer.context_tokens,
        "answer_ms": round((perf_counter() - started) * 1000, 3),
        "error": answer.error,
    }


# --- the results document ----------------------------------------------------------------------------------------


def _document(
    options: EvalOptions,
    tenant: Tenant,
    samples: list[dict],
    records: list[dict],
    ingest_seconds: float,
    seconds: float,
    embedder: Embedder,
) -> dict:
    """results.json: the run, what was stored, per-system metrics by category, and every question's record."""
    pages = Page.objects.filter(space__tenant=tenant)
    # dia_ids repeat across conversations ("D1:1" opens each one): count (conversation, dia_id) pairs
    stored_dia_ids = {
        (space_id, dia_id)
        for space_id, meta in pages.values_list("space_id", "source_meta")
        for dia_id in (meta or {}).get("dia_ids", [])
    }
    return {
        "data": str(options.data),
        "split_note": "LoCoMo dev split: report as dev-split results" if "dev" in Path(options.data).name else "",
        "conversations": [s["sample_id"] for s in samples],
        "tenant": tenant.slug,
        "reused_tenant": options.reuse,
        "embedder": embedder.name,
        "llm": options.llm,
        "reader": (OFFLINE_LABEL if options.llm == "offline" else "llm") if options.answer else None,
        "k": options.k,
        "curve_max_k": CURVE_MAX_K,
        "retrieve_pages_setting": CURVE_MAX_K,
        "ranking_note": (
            "memoryos (and memoryos:<stage>=<v> variants) is retrieve()'s fused ranking of every page, STM included; "
            "memoryos_paper merges its top segments' pages and its STM pages by cosine; flat_rag ranks every page by "
            "cosine; full_context is every page (no ranking, recall = ceiling)"
        ),
        "generated_at": timezone.now().isoformat(timespec="seconds"),
        "turns": sum(input_turns(s) for s in samples),
        "pages": pages.count(),
        "pages_with_dia_ids": len(stored_dia_ids),
        "pending_pages": pages.filter(tier=Tier.MID_TERM, segment__isnull=True).count(),
        "segments": Segment.objects.filter(space__tenant=tenant).count(),
        "memory_llm_calls": MemoryEvent.objects.filter(tenant=tenant).aggregate(n=Sum("llm_calls"))["n"] or 0,
        "questions": len(records),
        "query_embedding_ms": scoring.percentiles([r["embed_ms"] for r in records], (50, 95)),
        "questions_by_category": _counts(records),
        "ingest_seconds": round(ingest_seconds, 1),
        "seconds": round(seconds, 1),
        "systems": {system: _system_summary(system, records, options) for system in options.systems},
        "records": records,
    }


def _counts(records: list[dict]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        counts[str(record["category"])] = counts.get(str(record["category"]), 0) + 1
    return dict(sorted(counts.items()))


def _values(system: str, records: list[dict], key: str) -> list[tuple[int, float | None]]:
    return [(r["category"], r["systems"][system].get(key)) for r in records]


def _system_summary(system: str, records: list[dict], options: EvalOptions) -> dict:
    summary: dict = {
        "k": options.k if system not in UNRANKED_SYSTEMS else "all",
        "recall_at_k": scoring.by_category(_values(system, records, "recall_at_k")),
        "questions_with_evidence": sum(1 for r in records if r["evidence"]),
    }
    if system not in UNRANKED_SYSTEMS:
        summary["recall_curve"] = _curve(system, records)
        summary["by_conversation"] = _by_conversation(system, records)
        summary["retrieval_ms"] = scoring.percentiles([r["systems"][system]["retrieval_ms"] for r in records], (50, 95))
    if options.answer:
        for metric in ("f1", "f1_locomo", "bleu1"):
            summary[metric] = scoring.by_category(_values(system, records, metric))
        for metric in ("llm_calls", "prompt_tokens", "context_tokens"):
            summary[f"{metric}_per_answer"] = scoring.mean(v for _, v in _values(system, records, metric))
        summary["answer_ms"] = scoring.percentiles([r["systems"][system]["answer_ms"] for r in records], (50, 95))
        summary["answer_errors"] = sum(1 for r in records if r["systems"][system]["error"])
    return summary


def _by_conversation(system: str, records: list[dict]) -> dict[str, dict]:
    """recall@k per category and overall for each conversation, k = 1, 5, 10 and 20."""
    conversations = sorted({r["conversation"] for r in records})
    return {
        conversation: {
            f"@{k}": scoring.by_category(
                (r["category"], (r["systems"][system]["recall_curve"] or [None] * CURVE_MAX_K)[k - 1])
                for r in records
                if r["conversation"] == conversation
            )
            for k in (1, 5, 10, CURVE_MAX_K)
        }
        for conversation in conversations
    }


def _curve(system: str, records: list[dict]) -> dict[str, list[float | None]]:
    """Mean recall@k for k = 1 … CURVE_MAX_K, per category and overall."""
    points = [
        scoring.by_category(
            (r["category"], (r["systems"][system]["recall_curve"] or [None] * CURVE_MAX_K)[k]) for r in records
        )
        for k in range(CURVE_MAX_K)
    ]
    return {key: [point[key] for point in points] for key in points[0]} if points else {}
