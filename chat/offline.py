"""The reply when no language model is configured: plainly labelled, it says what is remembered that is relevant."""

from __future__ import annotations

from datetime import datetime

from memory.models import Page
from memory.retrieval import RetrievalResult
from memory.text import extract_keywords

OFFLINE_LABEL = "(Offline mode — no language model is configured.)"
# Cosine similarity above which a retrieved page or fact counts as relevant enough to mention.
RELEVANT = 0.3
MAX_FACTS = 3
MAX_PAGES = 3
MAX_RECENT = 2
QUOTE_CHARS = 180


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1].rsplit(" ", 1)[0] + "…"


def _day(at: datetime) -> str:
    return f"{at:%d %b %Y}".lstrip("0")


def _recent_on_topic(retrieval: RetrievalResult, dropped: set[tuple[str, int]]) -> list[Page]:
    """Short-term turns that share a keyword with the query, newest first (they have no embeddings yet)."""
    query = set(retrieval.query_keywords)
    if not query:
        return []
    recent = [p for p in reversed(retrieval.short_term) if ("page", p.id) not in dropped]
    return [p for p in recent if query & set(extract_keywords(p.user_message))][:MAX_RECENT]


def offline_reply(*, retrieval: RetrievalResult, dropped: set[tuple[str, int]] | None = None) -> str:
    """What is remembered that may be relevant to the query: pinned and relevant facts, relevant earlier turns,
    and turns of the current conversation on the same subject.

    Uses only what retrieval found and the prompt kept (`dropped` holds the (kind, id) keys left out); no LLM.
    """
    dropped = dropped or set()
    facts = [k.text for k in retrieval.pinned_knowledge if ("knowledge", k.id) not in dropped]
    relevant = sorted(
        (k for k in [*retrieval.user_knowledge, *retrieval.assistant_knowledge] if k.score >= RELEVANT),
        key=lambda k: -k.score,
    )
    facts += [k.entry.text for k in relevant if ("knowledge", k.entry.id) not in dropped and k.entry.text not in facts]
    pages = [p.page for p in retrieval.pages if p.score >= RELEVANT and ("page", p.page.id) not in dropped]
    lines = [f"- {_short(fact)}" for fact in facts[:MAX_FACTS]]
    lines += [f"- On {_day(page.at)} you said: “{_short(page.user_message)}”" for page in pages[:MAX_PAGES]]
    recent = _recent_on_topic(retrieval, dropped)
    lines += [f"- Earlier in this conversation you said: “{_short(page.user_message)}”" for page in recent]
    if not lines:
        return (
            f"{OFFLINE_LABEL} I don't remember anything relevant to this yet. I have kept your message, "
            "so I can bring it up when it matters."
        )
    return f"{OFFLINE_LABEL} Here is what I remember that may be relevant:\n" + "\n".join(lines)
