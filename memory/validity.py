"""What a statement gives the value of, so that a later statement of the same thing replaces it (pure, no database).

A claim is (slot, value): "I now drink green tea" claims slot "drink" = "green tea"; "The user moved to Leeds" claims
"home" = "leeds". Two claims of one slot with different values cannot both be current: the later one replaces the
earlier (memory.services.validity for stored facts; memory.retrieval for retrieved turns). "I've given up coffee"
claims that the slot "drink" no longer holds "coffee" (`ended`).

The rule is deliberately narrow: a slot is a thing a person has one of at a time (where they live, their employer and
job, their morning drink, their car, their diet, their name, a named pet, the date of a named trip, a favourite), and
a statement claims it only in the first person ("I", "we", "my", "our") or about the user ("The user", "the user's",
"you", "your"), never in a question. What the rule cannot read claims nothing, so it never replaces a fact wrongly by
guessing; a model, when one is configured, names replaced facts itself (memory.steps.model_steps, PROMOTION_SYSTEM).
Every pattern is linear: bounded repetitions, no nested quantifiers (tests/memory/test_validity.py times a hostile
input).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from memory.text import split_sentences

# Claims are read from the first part of a long text only: a statement of who someone is sits in a sentence, and a
# 64,000-character turn should not cost a scan of every sentence on every retrieval.
SCANNED_CHARS = 4000
CLAIMS_CACHED = 4096  # texts whose claims are remembered (memory: at most 4096 × SCANNED_CHARS characters)
VALUE_MAX_CHARS = 60


def _any(*words: str) -> str:
    """A group matching any of `words` (each a regular expression)."""
    return "(?:" + "|".join(words) + ")"


def _i(pattern: str) -> str:
    """`pattern` matched without regard to case (names and places keep their case-sensitive groups)."""
    return f"(?i:{pattern})"


WHO = _any("i", "we", "the user and others", "the user", "you")  # "we" as memory.statements rewrites it
WHOSE = _any("my", "our", "the user's", "your")
# Words that may sit between the subject and the verb: "I've now", "we have just", "the user has finally".
ADVERB = _any("now", "just", "finally", "recently", "actually", "also", "since", "already", "officially", "then")
AUX = _any("'ve", "'m", "'re", "'ll", " have", " has", " am", " is", " are", " will", " had") + f"?(?: {ADVERB}){{0,2}}"
SUBJECT = _i(rf"\b{WHO}{AUX} ")
PLACE_WORD = r"[A-Z][\w'’.-]{1,30}"
# a place starts a word (never inside one) and its words are joined by spaces only: nothing for a regex to retry
PLACE = rf"(?<![\w'’.-])(?P<value>{PLACE_WORD}(?: (?:de |da |del |la |le |am |upon |on )?{PLACE_WORD}){{0,3}})"
PHRASE = r"(?P<value>[^,.;:!?()\n]{2,60}?)"
PHRASE_END = (
    "(?=\\s*"
    + _any(
        r"[,.;:!?()\n]",
        "$",
        " and ",
        " but ",
        " because ",
        " since ",
        " so ",
        " which ",
        " instead",
        r" now\b",
        " these days",
        " at the moment",
        r" every\b",
        r" each\b",
        " in the morning",
        " first thing",
    )
    + ")"
)
DRINKS = _any(
    "coffee",
    "tea",
    "latte",
    "cappuccino",
    "espresso",
    "flat white",
    "americano",
    "mocha",
    "macchiato",
    "matcha",
    "chai",
    "rooibos",
    "cocoa",
    "hot chocolate",
    "juice",
    "smoothie",
    "kombucha",
    "water",
    "milk",
    "yerba mate",
    "decaf",
    "cortado",
)
# words before the drink name it ("oat", "black"), never a verb of giving it up ("has given up coffee")
DRINK_WORD = r"(?!given |gave |up |quit |stopped |no |never )[\w'’-]{1,20} "
DRINK_VALUE = rf"(?P<value>(?:{DRINK_WORD}){{0,3}}?{DRINKS}(?: {DRINKS})?" + r"(?: with (?-i:[a-z][\w'’-]{1,20}))?)"
# "have" claims a drink only as a habit: "I have a matcha latte every morning", not "I have a coffee with Bob".
HABIT_CUE = (
    r"\b"
    + _any("every", "each", "mornings?", "daily", "usually", "always", "first thing", "instead", "now", "these days")
    + r"\b"
)
DEST = PLACE.replace("value", "dest")
NAME = r"(?P<value>[A-Z][\w'’-]{1,30})"
DAY = r"(?:the )?\d{1,2}(?:st|nd|rd|th)?(?: of)? [A-Z][a-z]{2,8}"
DATE_VALUE = (
    "(?P<value>"
    + _any(DAY, r"[A-Z][a-z]{2,8} \d{1,2}(?:st|nd|rd|th)?", r"\d{4}-\d{2}-\d{2}", r"\d{1,2}/\d{1,2}(?:/\d{2,4})?")
    + r"(?:,? \d{4})?)"
)
PETS = _any(
    "dog",
    "cat",
    "puppy",
    "kitten",
    "rabbit",
    "bunny",
    "hamster",
    "parrot",
    "horse",
    "tortoise",
    "turtle",
    "guinea pig",
    "budgie",
    "ferret",
    "snake",
)
A = "(?:a |an |my |some |only )?"

LIVE = _any("live", "lives", "living", "moved", "move", "moving", "relocated", "relocating", "settled")
HOME = _any("home", "address", "flat", "apartment", "house", "place")
WORK = _any("work", "works", "working", "started", "start", "starting", "joined", "join", "joining")
DRINK = _any("drink", "drinks", "drinking", "switched to", "switch to", "starts? (?:my|the|their) day with")
GAVE_UP = _any(
    "given up",
    "gave up",
    "give up",
    "quit",
    "stopped drinking",
    "stop drinking",
    "no longer drinks?",
    "don't drink",
    "do not drink",
    "doesn't drink",
    "does not drink",
)
MOVED = _any(
    "moved", "rescheduled", "pushed back", "pushed", "postponed", "brought forward", "changed", "booked", "set"
)
GOT = _any("bought", "got", "picked up")
NEW_DATE = "(?:new )?(?:departure|date)"
LEAVE = _any("leave", "leaving", "fly", "flying", "depart", "departing", "head", "heading", "travel", "travelling")
TRIP = _any("trip", "flight", "holiday", "vacation", "visit")
DIETS = _any("vegetarian", "vegan", "pescatarian", "flexitarian", "gluten-free", "keto")


@dataclass(frozen=True)
class _Rule:
    slot: str  # may name a group: "pet:{kind}" takes the kind the statement names
    pattern: re.Pattern[str]
    ends: bool = False  # the statement says the slot no longer holds the value
    needs: tuple[re.Pattern[str], ...] = ()  # the sentence must also hold each of these (a first-person word, a cue)
    family: str = ""  # the kind of slot (the slot's name before any ":"): its TRIGGERS say when to try the rule


# For each kind of slot, words that every one of its rules' patterns requires, searched once in the case-folded text,
# so that a text holding none of them skips those rules (the rules' regexes were most of a retrieval's time when its
# turns were read for the first time). Each is implied by the patterns below: a home needs a word of living or of a
# home, a drink one of DRINKS, a trip's date a digit; tests/memory/test_validity.py checks that no claim is lost.
TRIGGERS = {
    "home": _any(LIVE, HOME),
    "employer": _any(WORK, "job", "employer", "company"),
    "occupation": _any(WORK, "job", "role", "position", "now"),
    "drink": DRINKS,
    "car": _any("driv", "car"),
    "diet": DIETS,
    "name": _any("name", "call me"),
    "pet": PETS,
    "trip": r"\d",
    "favourite": "favou?rite",
}


TRIGGER_PATTERNS = {family: re.compile(words) for family, words in TRIGGERS.items()}


def _rule(slot: str, *parts: str, ends: bool = False, needs: tuple[str, ...] = ()) -> _Rule:
    needed = tuple(re.compile(n, re.IGNORECASE) for n in needs)
    return _Rule(slot, re.compile("".join(parts)), ends, needed, family=slot.split(":")[0])


# A sentence in the first person, for rules whose pattern does not start at its subject.
FIRST_PERSON = r"\b(?:i|i'm|i've|i'd|i'll|me|my|we|we're|we've|us|our|the user|the user's)\b"
HOME_CUE = r"\b(?:lease|keys|moved|moving|move|relocated|settling|settled|live|living|rent|renting|bought)\b"


RULES = (
    # where they live
    _rule("home", SUBJECT, _i(rf"{LIVE} (?:back )?(?:to|in) (?:the city of )?"), PLACE),
    _rule("home", _i(rf"\b{WHOSE} (?:new )?{HOME} is (?:now )?(?:in|at) "), PLACE),
    _rule("home", _i(rf"\b{WHOSE} (?:new |little |small |tiny |current )?{HOME} in "), PLACE),
    _rule("home", _i(rf"\b{WHO}\b[^.!?]{{0,40}}?\b(?:moved|relocated) (?:back )?to "), PLACE),
    _rule("home", _i(r"\b(?:an? |the )?(?:new |little |small )?(?:flat|apartment|house|home) in "), PLACE,
          needs=(FIRST_PERSON, HOME_CUE)),
    # who they work for, and as what
    _rule("employer", SUBJECT, _i(rf"{WORK}(?: a new job| my new job| work)? (?:at|for) "), PLACE),
    _rule("employer", _i(rf"\b{WHOSE} (?:new )?(?:job|employer|company) is (?:at |with )?"), PLACE),
    _rule("occupation", SUBJECT, _i(rf"{WORK}(?: a new job)? as (?=an? )"), PHRASE, PHRASE_END),
    _rule("occupation", _i(rf"\b{WHOSE} (?:new )?(?:job|role|position) is (?=an? )"), PHRASE, PHRASE_END),
    _rule("occupation", _i(rf"\b{WHO}(?:'m| am| are| is| will be|'ll be) now (?=an? )"), PHRASE, PHRASE_END),
    # their usual drink
    _rule("drink", SUBJECT, _i(f"{DRINK} {A}"), _i(DRINK_VALUE)),
    _rule("drink", SUBJECT, _i(f"(?:have|has|having|had) {A}"), _i(DRINK_VALUE), needs=(HABIT_CUE,)),
    _rule("drink", _i(rf"\b(?:and|but|so) now (?:have|has|drink|drinks) {A}"), _i(DRINK_VALUE),
          needs=(FIRST_PERSON,)),
    _rule("drink", _i(f"\\b(?:days?|mornings?) (?:begins?|starts?) with {A}"), _i(DRINK_VALUE), needs=(FIRST_PERSON,)),
    _rule("drink", _i(rf"\b{WHOSE} (?:morning |usual |daily |go-to )?(?:drink|beverage|coffee order) is {A}"),
          _i(DRINK_VALUE)),
    _rule("drink", SUBJECT, _i(f"{GAVE_UP} (?:on )?(?:the |my )?"), _i(DRINK_VALUE), ends=True),
    # what they drive
    _rule("car", SUBJECT, _i("(?:drive|drives|driving) (?:a |an )"), PHRASE, PHRASE_END),
    _rule("car", _i(rf"\b{WHOSE} (?:new )?car is (?:now )?(?:a |an )"), PHRASE, PHRASE_END),
    _rule("car", SUBJECT, _i(f"{GOT} (?:a |an |our |my )?(?:new |used |second-hand )?car[:,]? (?=an? )"), PHRASE,
          PHRASE_END),
    # how they eat
    _rule("diet", _i(rf"\b{WHO}(?:'m| am| are| is|'re)(?: now| still)? (?P<value>{DIETS})\b")),
    # what they are called
    _rule("name", _i(rf"\b{WHOSE} name is "), r"(?P<value>[A-Z][\w'’-]{1,30}(?: [A-Z][\w'’-]{1,30}){0,2})"),
    _rule("name", _i(r"\b(?:please )?call me "), NAME),
    # a named pet: the name of "my dog" (a second dog is another pet, so only "my <pet> is called" claims it)
    _rule("pet:{kind}", _i(rf"\b{WHOSE} (?P<kind>{PETS})(?:'s name is| is called| is named) "), NAME),
    # when a named trip is
    _rule(
        "trip:{dest}", _i(rf"\b{WHOSE} {TRIP} to "), DEST,
        _i(rf"(?: (?:is|was|has been|got|will be))?(?: {MOVED})?(?: to| on| for)? (?:the )?"), DATE_VALUE,
    ),
    _rule("trip:{dest}", SUBJECT, _i(rf"{LEAVE} (?:out )?(?:for|to) "), DEST, _i(",? on (?:the )?"), DATE_VALUE),
    _rule("trip:{dest}", DEST, _i(r",? (?:departing|leaving|flying out) (?:on )?(?:the )?"), DATE_VALUE,
          needs=(FIRST_PERSON,)),
    _rule("trip:{dest}", DEST, _i(r" (?:trip |holiday |flight |visit )?is now (?:on|for) (?:the )?"), DATE_VALUE,
          needs=(FIRST_PERSON,)),
    _rule("trip:{dest}", _i(r"\bthe "), DEST, _i(rf" {TRIP}\b[^.!?]{{0,40}}?\b{NEW_DATE} is (?:now )?"), DATE_VALUE,
          needs=(FIRST_PERSON,)),
    # a favourite
    _rule(
        "favourite:{kind}", _i(rf"\b{WHOSE} (?:new )?favou?rite (?P<kind>[a-z]{{2,20}}(?: [a-z]{{2,20}})?) is "),
        _i("(?:now )?(?:a |an |the )?"), PHRASE, PHRASE_END,
    ),
)  # fmt: skip

ARTICLE = re.compile(r"^(?:a|an|the|my|our|some|only)\s+", re.IGNORECASE)
NOISE = re.compile(
    r"\s+" + _any("now", "instead", "these days", "too", "as well", "every morning", "each morning", "in the morning")
    + "$", re.IGNORECASE,
)  # fmt: skip


@dataclass(frozen=True)
class Claim:
    """A statement's value of one slot; `ended`: it says the slot no longer holds that value."""

    slot: str
    value: str
    ended: bool = False

    def replaces(self, earlier: Claim) -> bool:
        """Whether this claim, said later, makes `earlier` no longer current: the same slot, and another value (or,
        for an ending, the value it ends)."""
        if self.slot != earlier.slot or earlier.ended:
            return False
        if self.ended:
            return same_value(self.value, earlier.value)
        return not same_value(self.value, earlier.value)


def value_key(value: str) -> str:
    """A value as compared: lower case, single spaces, without a leading article or a trailing "now"."""
    value = " ".join(value.replace("’", "'").split()).strip(" '\".")
    value = NOISE.sub("", ARTICLE.sub("", value))
    return value.casefold()


def same_value(one: str, other: str) -> bool:
    """Whether two values name the same thing: equal, or one holds the other as whole words ("coffee" and
    "black coffee", "Leeds" and "Leeds city centre")."""
    a, b = value_key(one), value_key(other)
    if not a or not b:
        return False
    if a == b:
        return True
    shorter, longer = sorted((a, b), key=len)
    return re.search(rf"(?<!\w){re.escape(shorter)}(?!\w)", longer) is not None


def _statements(text: str) -> Iterable[str]:
    for sentence in split_sentences(text[:SCANNED_CHARS]):
        if not sentence.rstrip("\"'”’)] ").endswith("?"):
            yield sentence


def claims(text: str) -> list[Claim]:
    """Every claim the statements of `text` make, in the order said; a later claim of a slot in the same text wins
    over an earlier one of it ("I've given up coffee, I now drink green tea" ends coffee and claims green tea)."""
    return list(_claims_of(text[:SCANNED_CHARS]))


@lru_cache(maxsize=CLAIMS_CACHED)
def _claims_of(scanned: str) -> tuple[Claim, ...]:
    """`claims`, remembered for the texts read lately: retrieval reads the claims of every turn and fact it found on
    each question, and a user's turns come back question after question (the rules' regexes were a fifth of a
    retrieval's time). Keyed by the scanned part of the text, so an entry is at most SCANNED_CHARS long."""
    found: list[Claim] = []
    folded = scanned.casefold()
    present = {family for family, trigger in TRIGGER_PATTERNS.items() if trigger.search(folded)}
    rules = [rule for rule in RULES if rule.family in present]
    if not rules:
        return ()
    for sentence in _statements(scanned):
        said: list[tuple[int, Claim]] = []
        for rule in rules:
            if any(need.search(sentence) is None for need in rule.needs):
                continue
            for match in rule.pattern.finditer(sentence):
                claim = _claim(rule, match)
                if claim is not None and claim not in [c for _, c in said]:
                    said.append((match.start(), claim))
        found += [claim for _, claim in sorted(said, key=lambda pair: pair[0])]
    return tuple(found)


def _claim(rule: _Rule, match: re.Match[str]) -> Claim | None:
    groups = match.groupdict()
    value = value_key(groups["value"])
    if not value or len(value) > VALUE_MAX_CHARS:
        return None
    slot = rule.slot.format(**{k: value_key(v) for k, v in groups.items() if k != "value" and v})
    return Claim(slot=slot, value=value, ended=rule.ends)


def claims_read_ahead(texts: Iterable[str]) -> None:
    """Read the claims of `texts` now, so that `replacements` finds them remembered (`_claims_of`): retrieval reads
    those of the turns and facts it already has while its page channels are still being read beside."""
    for text in texts:
        claims(text)


def current_claims(text: str) -> dict[str, Claim]:
    """The slot → claim a text leaves standing: its last claim of each slot."""
    standing: dict[str, Claim] = {}
    for claim in claims(text):
        standing[claim.slot] = claim
    return standing


def first_slot(text: str) -> str:
    """The slot a fact's text gives a value of (its last claim's), or "" when it claims none."""
    found = [claim for claim in claims(text) if not claim.ended]
    return found[-1].slot if found else ""


def replaced_by(earlier_text: str, later_text: str) -> list[Claim]:
    """The claims of `later_text` that replace one of `earlier_text`'s (said in that order)."""
    earlier = claims(earlier_text)
    return [claim for claim in claims(later_text) if any(claim.replaces(old) for old in earlier)]


@dataclass(frozen=True)
class Said:
    """A statement retrieval found: a turn's message or a fact, named by (kind, id), and when it was said."""

    key: tuple[str, int]
    text: str
    at: datetime


@dataclass(frozen=True)
class Replacement:
    """Why a statement is no longer current: `by` said later that its slot now holds `value` ("" for an ending)."""

    by: tuple[str, int] | None  # None: a person marked it outdated
    at: datetime
    slot: str
    value: str


def replacements(said: list[Said]) -> dict[tuple[str, int], Replacement]:
    """For each statement one of whose claims a later statement replaces, the latest such replacement.

    Pure and small: retrieval passes the few turns and facts it found (tens), each read once.
    """
    read = [(item, list(current_claims(item.text).values())) for item in said]
    found: dict[tuple[str, int], Replacement] = {}
    for item, own in read:
        for later, theirs in read:
            if later.at <= item.at or later.key == item.key:
                continue
            for new in theirs:
                if any(new.replaces(old) for old in own) and (item.key not in found or found[item.key].at < later.at):
                    found[item.key] = Replacement(later.key, later.at, new.slot, "" if new.ended else new.value)
    return found
