"""The reply when no language model is configured: plainly labelled, it answers from the most relevant memory.

Every remembered turn (short-term ones included), fact and profile line that retrieval found is a candidate; each is
scored by the share of the query's content words it holds (with simple stemming) plus its embedding similarity, and
only candidates above a floor count, or turns retrieval's fused ranking put high (RANKED_FLOOR). Turns go in the order
retrieval ranked them, merged by score with the facts and the profile; what is no longer current (a later turn
replaced it, RetrievalResult.earlier) goes after what is, unless the question asks about the past. The best one answers
first, in one line with its date, told back to the user ("You like kiwis — you told me on 22 Nov."); at most three
others follow. The candidates used are returned, best first, so that "Memory used" names exactly them. Only what
people said is a candidate: questions are not answers, and a reply the system wrote is never read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from memory.embeddings import cosine
from memory.models import KnowledgeEntry, Page, ProfileVersion
from memory.retrieval.result import RetrievalResult, ScoredPage
from memory.services.embedding_state import embedder_for_store
from memory.statements import to_user
from memory.steps.offline_steps import PROFILE_HEADER
from memory.text import STOPWORDS, split_sentences, word_set

OFFLINE_LABEL = "(Offline mode — no language model is configured.)"
NOTHING_RELEVANT = (
    "I don't remember anything relevant to this yet. I have kept your message, so I can bring it up when it matters."
)
NOTHING_RELEVANT_PAUSED = (
    "I don't remember anything relevant to this. Memory is paused, so I won't keep this message beyond the latest "
    "few turns."
)
ALSO_RELEVANT = "Also relevant:"
MAX_SUPPORTING = 3
QUOTE_CHARS = 180
# Embedding similarity at which a candidate counts without sharing a word with the query; it adds half its value to
# the score of one that does, so that of two candidates holding the same words the closer in meaning wins.
RELEVANT_COSINE = 0.5
COSINE_WEIGHT = 0.5
# A turn retrieval's fused score puts at least this high answers in retrieval's order even without a shared word
# (evaluation/currency_eval.py: chosen on the generated personal-assistant set, seed 1, checked on seeds 2 and 3).
RANKED_FLOOR = 0.3

# Stopwords that carry the question's meaning here: "What fruit do I like?" is answered by "I like kiwis".
MEANINGFUL = word_set("like liked likes want wanted need needs use used feel feels felt")
QUESTION_FILLER = word_set("remember recall forget anything something everything tell")
IGNORED = (STOPWORDS - MEANINGFUL) | QUESTION_FILLER
QUESTION_OPENERS = word_set(
    "what where when who whom whose which why how is are was were do does did can could will would should shall "
    "may might must have has had am any and but or so"
)
PAST = re.compile(
    r"\b(?:before|previous|previously|used to|earlier|former|formerly|originally|no longer|any ?more|"
    r"gave up|give up|given up|sold|left behind|leave behind)\b",
    re.IGNORECASE,
)
TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def _stem(word: str) -> str:
    """A crude stem, the same for the forms of one word: kiwis/kiwi, likes/liked/like, working/works/work."""
    word = word.lower().replace("’", "'").removesuffix("'s")
    for suffix, replacement in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith(("ss", "us", "is")):
            word = word[: -len(suffix)] + replacement
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiousl":
        word = word[:-1]  # running -> runn -> run
    return word.removesuffix("e") if len(word) > 3 else word


def content_stems(text: str) -> set[str]:
    """The stems of a text's content words (what it is about), without function words and small talk."""
    words = (token.lower().replace("’", "'") for token in TOKEN.findall(text))
    return {_stem(word) for word in words if word not in IGNORED and len(word) > 1 and not word.isdigit()}


@dataclass(frozen=True)
class Candidate:
    """A remembered item that may answer the query: its best sentence, its date and how relevant it is."""

    kind: str  # "page", "knowledge" or "profile", as recorded in ChatReply.memory_used
    id: int
    sentence: str
    at: datetime
    score: float
    told: bool  # the user said it (a turn) rather than memory noted it (a fact, the profile)
    quote: str = ""  # the turn's message, quoted in a supporting line
    segment_id: int | None = None  # the topic a mid-term turn belongs to
    store: str = ""  # "user_knowledge" or "assistant_knowledge" for a fact
    earlier: bool = False  # no longer current: something said later replaced it (RetrievalResult.earlier)
    position: int | None = None  # a turn's place in retrieval's fused ranking (None: not ranked there)


@dataclass(frozen=True)
class OfflineReply:
    text: str
    used: list[Candidate]  # the candidates the reply mentions, best first


def _statements(text: str) -> list[str]:
    """The statements of a text: its sentences that are not questions, and the told part of a question that opens
    with one ("My knee aches after runs, should I worry?" -> "My knee aches after runs")."""
    statements = []
    for sentence in split_sentences(text):
        if not sentence.rstrip("\"'”’)] ").endswith("?"):
            statements.append(sentence)
            continue
        head = sentence.split(",", 1)[0] if "," in sentence else ""
        words = head.lower().split()
        if len(words) >= 3 and words[0] not in QUESTION_OPENERS:
            statements.append(head)
    return statements


def _best_sentence(text: str, query: set[str]) -> tuple[str, float] | None:
    """The statement of `text` holding most of the query's words, with that share; None if it has no statement."""
    best: tuple[str, float] | None = None
    for sentence in _statements(text):
        if not content_stems(sentence):
            continue  # small talk ("Hi!", "Thanks!") answers nothing
        share = len(query & content_stems(sentence)) / len(query) if query else 0.0
        if best is None or share > best[1]:
            best = (sentence, share)
    return best


def _candidate(
    kind: str,
    item_id: int,
    text: str,
    query: set[str],
    similarity: float,
    *,
    at: datetime,
    relevant: bool = False,
    **fields,
) -> Candidate | None:
    """The item as a candidate when its best statement shares a word with the query or is close in meaning (or,
    `relevant`, whenever it has a statement: retrieval judged it relevant)."""
    best = _best_sentence(text, query)
    if best is None or (best[1] == 0 and similarity < RELEVANT_COSINE and not relevant):
        return None
    sentence, share = best
    return Candidate(kind, item_id, sentence, at, share + COSINE_WEIGHT * similarity, **fields)


def _ranked_candidate(scored: ScoredPage, position: int, query: set[str], earlier: bool) -> Candidate | None:
    """A turn retrieval ranked, as a candidate in its place when its fused score reaches RANKED_FLOOR (retrieval's
    channels found it relevant, whether or not it shares a word with the question), else as any turn is."""
    if scored.fused < RANKED_FLOOR:
        return _page_candidate(scored.page, query, scored.score, earlier)
    return _page_candidate(scored.page, query, scored.score, earlier, position=position, relevant=True)


def _page_candidate(
    page: Page, query: set[str], similarity: float, earlier: bool = False, **ranked
) -> Candidate | None:
    quote = " ".join(page.user_message.split())
    fields: dict[str, Any] = {"told": True, "quote": quote, "segment_id": page.segment_id, "earlier": earlier}
    return _candidate("page", page.id, page.user_message, query, similarity, at=page.at, **fields, **ranked)


def _knowledge_candidate(entry: KnowledgeEntry, query: set[str], similarity: float) -> Candidate | None:
    fields: dict[str, Any] = {"told": False, "store": f"{entry.kind}_knowledge"}
    return _candidate("knowledge", entry.id, entry.text, query, similarity, at=entry.created_at, **fields)


def _profile_candidate(profile: ProfileVersion, query: set[str]) -> Candidate | None:
    lines = [line.strip().removeprefix("- ") for line in profile.text.splitlines() if line.strip() != PROFILE_HEADER]
    return _candidate("profile", profile.id, "\n".join(lines), query, 0.0, at=profile.created_at, told=False)


def _short_term_similarities(retrieval: RetrievalResult, pages: list[Page]) -> list[float]:
    """Embedding similarity of the query to each short-term turn's message (short-term turns are not embedded yet)."""
    if not pages or not retrieval.query.strip():
        return [0.0] * len(pages)
    vectors = embedder_for_store().embed([retrieval.query, *(page.user_message for page in pages)])
    return [cosine(vectors[0], np.asarray(vector)) for vector in vectors[1:]]


def candidates(retrieval: RetrievalResult, dropped: set[tuple[str, int]]) -> list[Candidate]:
    """Every relevant remembered item that the prompt kept, best first (newer first on a tie), each once."""
    query = content_stems(retrieval.query)
    if not query:
        return []  # a greeting or small talk asks nothing that memory could answer
    found: list[Candidate | None] = []
    earlier = retrieval.earlier
    ranked = {scored.page.id for scored in retrieval.ranked}
    for position, scored in enumerate(retrieval.ranked):
        found.append(_ranked_candidate(scored, position, query, scored.page.id in earlier))
    short_term = [page for page in retrieval.short_term if page.id not in ranked]
    short_term = [page for page in short_term if ("page", page.id) not in dropped]
    for page, similarity in zip(short_term, _short_term_similarities(retrieval, short_term), strict=True):
        found.append(_page_candidate(page, query, similarity, page.id in earlier))
    found += [
        _page_candidate(s.page, query, s.score, s.page.id in earlier)
        for s in retrieval.pages
        if s.page.id not in ranked
    ]
    found += [_page_candidate(page, query, 0.0, page.id in earlier) for page in retrieval.pinned_pages]
    scored_knowledge = [*retrieval.user_knowledge, *retrieval.assistant_knowledge]
    found += [_knowledge_candidate(scored.entry, query, scored.score) for scored in scored_knowledge]
    found += [_knowledge_candidate(entry, query, 0.0) for entry in retrieval.pinned_knowledge]
    if retrieval.profile is not None and retrieval.profile.text.strip():
        found.append(_profile_candidate(retrieval.profile, query))
    best: dict[tuple[str, int], Candidate] = {}
    for candidate in found:
        if candidate is None or (candidate.kind, candidate.id) in dropped:
            continue
        key = (candidate.kind, candidate.id)
        if key not in best or (candidate.position is not None, candidate.score) > (
            best[key].position is not None,
            best[key].score,
        ):
            best[key] = candidate
    # what is true now answers first, unless the question asks what used to be (then what was replaced)
    past = asks_about_the_past(retrieval.query)
    return sorted(_merged(best.values()), key=lambda c: c.earlier != past)


def _merged(found: Iterable[Candidate]) -> list[Candidate]:
    """The turns in the order retrieval ranked them (its channels judge relevance better than shared words),
    merged with the other candidates by score (best first, newer first on a tie): each list keeps its order, and
    the better head of the two goes next."""
    found = list(found)
    ranked = sorted((c for c in found if c.position is not None), key=lambda c: c.position or 0)  # never None here
    others = sorted(
        (c for c in found if c.position is None), key=lambda c: (-c.score, -c.at.timestamp(), c.kind, -c.id)
    )
    merged: list[Candidate] = []
    while ranked and others:
        merged.append(ranked.pop(0) if ranked[0].score >= others[0].score else others.pop(0))
    return merged + ranked + others


def asks_about_the_past(query: str) -> bool:
    """Whether a question asks what used to be true ("What did I drink before?", "my previous job")."""
    return PAST.search(query) is not None


def _day(at: datetime, now: datetime | None) -> str:
    day = f"{at:%d %b}".lstrip("0")
    return day if now is None or at.year == now.year else f"{day} {at.year}"


def _short(text: str) -> str:
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _answer(best: Candidate, now: datetime | None) -> str:
    said = to_user(best.sentence).rstrip(" .!…")
    source = "you told me" if best.told else "I noted it"
    if best.earlier:
        return f"{said} — {source} on {_day(best.at, now)}, and that changed later."
    return f"{said} — {source} on {_day(best.at, now)}."


def _supporting(candidate: Candidate, now: datetime | None) -> str:
    if candidate.told and candidate.earlier:
        return f"- Earlier (no longer current), on {_day(candidate.at, now)} you said: “{_short(candidate.quote)}”"
    if candidate.told:
        return f"- On {_day(candidate.at, now)} you said: “{_short(candidate.quote)}”"
    return f"- {_short(to_user(candidate.sentence))} (noted {_day(candidate.at, now)})"


def offline_reply(
    *,
    retrieval: RetrievalResult,
    dropped: set[tuple[str, int]] | None = None,
    now: datetime | None = None,
    paused: bool = False,
) -> OfflineReply:
    """The answer from the most relevant memory the prompt kept (`dropped` holds the (kind, id) keys left out).

    No LLM; one embedding call for the short-term turns. With nothing relevant it says so, and uses nothing; while
    memory is `paused` it says the message will not be kept (only the latest few turns are).
    """
    ranked = candidates(retrieval, dropped or set())
    if not ranked:
        nothing = NOTHING_RELEVANT_PAUSED if paused else NOTHING_RELEVANT
        return OfflineReply(text=f"{OFFLINE_LABEL} {nothing}", used=[])
    best, supporting = ranked[0], ranked[1 : 1 + MAX_SUPPORTING]
    lines = [f"{OFFLINE_LABEL} {_answer(best, now)}"]
    if supporting:
        lines += [ALSO_RELEVANT, *(_supporting(candidate, now) for candidate in supporting)]
    return OfflineReply(text="\n".join(lines), used=[best, *supporting])


def offline_memory_used(reply: OfflineReply, *, retrieval: RetrievalResult, tokens: int, budget: int) -> dict:
    """The record of the memory an offline reply used (the shape of RetrievalResult.used()), best first.

    Only what the reply mentions: its turns (short-term ones too) under "pages", with their topics, its facts and
    the profile when a line of it was used; nothing else that retrieval found.
    """
    # every key retrieval records, emptied: what retrieval found but the reply did not mention was not used
    used: dict = {key: [] for key in retrieval.used()}
    used["profile_version_id"] = None
    used["visited_segment_ids"] = list(retrieval.visited_segment_ids)
    for candidate in reply.used:
        entry = {"id": candidate.id, "score": round(candidate.score, 4)}
        if candidate.kind == "page":
            used["pages"].append(entry)
            if candidate.segment_id and candidate.segment_id not in {s["id"] for s in used["segments"]}:
                used["segments"].append({"id": candidate.segment_id, "score": entry["score"]})
        elif candidate.kind == "knowledge":
            used[candidate.store].append(entry)
        else:
            used["profile_version_id"] = candidate.id
    used["estimated_prompt_tokens"] = tokens
    used["token_budget"] = budget
    return used
