"""How often memory answers with what is true now (issue 30): questions about facts that changed, answered offline.

A generated set (evaluation/devsets.py) tags each question about a changed fact with `validity`: "current" asks the
latest value, "previous" the one before; `other_value` is the value a right answer must not give. Each conversation is
replayed into its own space (offline updating steps); with `promote`, every segment is then promoted, so long-term
facts exist and later ones supersede earlier ones as they would for a long-lived user. Each tagged question is
retrieved and answered by the offline reply (chat.offline_reply: no model). An answer is right when its first line holds
the asked value's words and not the other value's.

Beside each figure, the same retrieval without what validity adds to it (no turn marked earlier, pages in fused
order): the build before issue 30 for turns (its knowledge channel still leaves replaced facts out, when promoted).
For "current" questions it also counts how often a turn stating the other value reached the prompt, and how often
that turn was marked earlier there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from chat.offline_reply import offline_reply
from evaluation import locomo
from evaluation.locomo_eval import conversation_ingest
from evaluation.scope import celery_eager, settings_changed
from memory.models import Page, Segment, Tenant
from memory.retrieval.result import RetrievalResult
from memory.retrieval.search import retrieve
from memory.services.promotion import segment_promote
from memory.services.tenancy import tenant_create
from memory.text import STOPWORDS, word_set

# A segment this warm is hot whatever its visits (memory.heat): promoting every segment of a replayed conversation.
PROMOTED_INTERACTIONS = 1000
FILLER = word_set("a an the at of and with to in on for")


@dataclass
class Record:
    set: str
    sample_id: str
    question: str
    validity: str  # "current" or "previous"
    right: bool
    right_without: bool  # the same retrieval without validity's marks and order
    other_quoted: bool = False  # ("current") a turn stating the other value reached the prompt
    other_marked: bool = False  # ... and was marked earlier there


def currency_evaluate(*, data: list[Path], tenant_slug: str, promote: bool = False) -> list[Record]:
    """Replay each set's conversations into a fresh tenant `<tenant_slug>-<n>-<set>`, answer the tagged questions.

    Side effects: creates the tenants and their memory (Celery eager, offline steps). Raises ValueError when a
    tenant already exists.
    """
    records: list[Record] = []
    with settings_changed(LLM_BASE_URL=""), celery_eager():
        for number, path in enumerate(data, start=1):
            tenant = _fresh_tenant(f"{tenant_slug}-{number}-{path.stem}".replace("_", "-"))
            name = f"{path.parent.name}/{path.stem}"
            for sample in locomo.load(path):
                records += _conversation_records(tenant, name, sample, promote)
    return records


def _fresh_tenant(slug: str) -> Tenant:
    if Tenant.objects.filter(slug=slug).exists():
        raise ValueError(f"tenant {slug!r} already exists; every run needs a fresh tenant (--tenant)")
    return tenant_create(slug=slug, name=f"Currency evaluation {slug}")


def _conversation_records(tenant: Tenant, name: str, sample: dict, promote: bool) -> Iterator[Record]:
    tagged = [qa for qa in sample["qa"] if qa.get("validity")]
    if not tagged:
        return
    space = conversation_ingest(tenant=tenant, sample=sample)
    if promote:
        for segment_id in Segment.objects.filter(space=space).order_by("id").values_list("id", flat=True):
            Segment.objects.filter(pk=segment_id).update(l_interaction=PROMOTED_INTERACTIONS)
            segment_promote(segment_id=segment_id)
    now = Page.objects.filter(space=space).order_by("-seq").values_list("at", flat=True).first() + timedelta(days=1)
    for qa in tagged:
        retrieval = retrieve(space=space, query=qa["question"], record_visits=False, now=now)
        answer, other = str(qa["answer"]), str(qa["other_value"])
        record = Record(
            set=name, sample_id=sample["sample_id"], question=qa["question"], validity=qa["validity"],
            right=_answers(retrieval, answer, other, now),
            right_without=_answers(_without(retrieval), answer, other, now),
        )  # fmt: skip
        if qa["validity"] == "current":
            stating = [p for p in _quoted_pages(retrieval) if _holds(p.user_message, other)]
            record.other_quoted = bool(stating)
            record.other_marked = bool(stating) and all(p.id in retrieval.earlier for p in stating)
        yield record


def _answers(retrieval: RetrievalResult, value: str, other: str, now) -> bool:
    first_line = offline_reply(retrieval=retrieval, now=now).text.splitlines()[0]
    return _holds(first_line, value) and not _holds(first_line, other)


def _without(retrieval: RetrievalResult) -> RetrievalResult:
    """The retrieval as it ranked before validity: fused order, nothing marked earlier."""
    ranked = sorted(retrieval.ranked, key=lambda p: (-p.fused, -p.score, p.page.id))
    pages = sorted(retrieval.pages, key=lambda p: (-p.fused, -p.score, p.page.id))
    return dataclasses.replace(retrieval, ranked=ranked, pages=pages, earlier={})


def _quoted_pages(retrieval: RetrievalResult) -> list[Page]:
    return [*retrieval.short_term, *(p.page for p in retrieval.pages), *retrieval.pinned_pages]


def _words(value: str) -> set[str]:
    words = {w.strip(".,;:!?'\"()").casefold() for w in value.replace("’", "'").split()}
    return {w for w in words if w and w not in FILLER and w not in STOPWORDS}


def _holds(text: str, value: str) -> bool:
    """Whether `text` holds every content word of `value` ("a beagle called Biscuit": beagle, called, biscuit)."""
    wanted = _words(value)
    return bool(wanted) and wanted <= _words(text)


def currency_table(records: list[Record]) -> str:
    """One Markdown row per set and kind of question: how many, the share answered right with and without
    validity, and for "current" questions how often a turn with the other value was quoted, and marked earlier."""
    rows = [
        "| set | asks | questions | answered right | without validity | other value quoted | of those marked earlier |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(r.set for r in records):
        for validity in ("current", "previous"):
            chosen = [r for r in records if r.set == name and r.validity == validity]
            if chosen:
                rows.append(_row(name, validity, chosen))
    return "\n".join(rows)


def _row(name: str, validity: str, chosen: list[Record]) -> str:
    n = len(chosen)
    right = sum(r.right for r in chosen) / n
    without = sum(r.right_without for r in chosen) / n
    if validity == "current":
        quoted = [r for r in chosen if r.other_quoted]
        marked = f"{sum(r.other_marked for r in quoted)} / {len(quoted)}" if quoted else "–"
        quoted_share = f"{len(quoted)} / {n}"
    else:
        quoted_share = marked = "–"
    return f"| {name} | {validity} value | {n} | {right:.3f} | {without:.3f} | {quoted_share} | {marked} |"
