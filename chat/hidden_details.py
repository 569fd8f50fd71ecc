"""A short note where the end user's own text was masked on their page (the tenant's personal-data policy), so a
"[card ending 5556]" in what they wrote does not read as a fault: once per page, naming the kinds hidden."""

from __future__ import annotations

from collections.abc import Iterable

from memory.models import KnowledgeEntry, Page, ProfileVersion, Segment
from memory.personal_data import CARD, EMAIL, GOVERNMENT_ID, IBAN, PHONE, SECRET, masked_categories
from memory.selectors.case import CaseSearch
from memory.selectors.self_service import Remembered, Turn

USER_WORDS = {
    EMAIL: "email addresses",
    PHONE: "phone numbers",
    CARD: "card numbers",
    IBAN: "bank account numbers (IBANs)",
    GOVERNMENT_ID: "government id numbers",
    SECRET: "passwords and keys",
}


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def hidden_details_note(texts: Iterable[str]) -> str:
    """The note for a page showing `texts`, or "" when nothing in them was masked."""
    categories = masked_categories(texts)
    if not categories:
        return ""
    return f"Some details are hidden: your organisation's policy masks {_listed([USER_WORDS[c] for c in categories])}."


def pages_texts(pages: Iterable[Page]) -> list[str]:
    """What each turn says: the user's message and the reply."""
    return [text for page in pages for text in (page.user_message, page.assistant_reply)]


def conversation_texts(turns: list[Turn]) -> list[str]:
    return pages_texts(turn.page for turn in turns)


def memory_texts(remembered: Remembered, found: CaseSearch | None) -> list[str]:
    """Every text the memory page shows: the profile and its versions, facts, topics and turns, or what was found."""
    pages: Iterable[Page]
    topics: Iterable[Segment]
    facts: Iterable[KnowledgeEntry]
    versions: Iterable[ProfileVersion]
    if found is not None:
        pages, topics, facts, versions = found.pages, found.segments, found.knowledge, found.profiles
    else:
        pages, topics, facts = remembered.recent_pages, remembered.segments, remembered.facts
        versions = [remembered.profile, *remembered.earlier_profiles] if remembered.profile else []
    texts = [version.text for version in versions] + [fact.text for fact in facts]
    texts += [topic.summary for topic in topics]
    return texts + pages_texts(pages)
