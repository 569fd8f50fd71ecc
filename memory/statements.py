"""First-person sentences turned into statements: "I have a dog called Pepper" -> "The user has a dog called Pepper".

Pure functions of plain strings. Offline facts and the offline profile are statements about the user (third person),
assistant commitments are statements about the assistant, and the offline reply speaks to the user (second person).
The grammar is deliberately small: the common pronouns and contractions, and verb agreement right after the subject
(and after "and" for common verbs), which covers what people say about themselves in a chat.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from memory.text import word_set

WORD = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*")


MODALS = word_set(
    "can could will would shall should may might must can't couldn't won't wouldn't shouldn't mustn't didn't "
    "wasn't hadn't had did was used ought need"
)
# Past forms (and verbs whose present and past look alike) that never take an -s after "the user".
PAST_FORMS = word_set(
    "went got made took bought ran saw came gave found felt left kept met paid said sold sent spent thought told "
    "understood won wrote ate drove flew grew knew lost began brought built caught chose drank fell forgot heard "
    "held lent meant rode rang sang sat slept spoke stood swam taught threw woke wore broke became dreamt fought "
    "hid led put read cut quit hit let set shut cost hurt bet spread split burst upset been done gone"
)
ADVERBS = word_set(
    "also really just never always still usually often sometimes finally recently actually already only even "
    "mostly probably definitely totally absolutely generally rarely seldom currently now then truly genuinely "
    "honestly basically literally barely hardly nearly almost mainly kinda sorta somehow"
)
LY_VERBS = word_set("apply reply rely supply fly ally bully multiply comply imply")
# Common verbs that, after "and", continue the subject's clause ("… and carry an EpiPen").
CONJUNCT_VERBS = word_set(
    "have do go carry like love hate work live play want need take make get use own enjoy prefer run walk eat "
    "drink cook write study teach speak know think feel try plan hope visit watch keep drive ride swim train "
    "volunteer practise practice collect bake paint sing dance travel wear call miss help follow avoid attend "
    "belong come spend sleep buy grow hike climb cycle knit sew fix listen believe remember support manage lead "
    "rent share raise care see meet bring read"
)
# Words after a conjunct verb that show it is a verb with an object, not a noun ("and travel a lot").
OBJECT_OPENERS = word_set(
    "a an the my our his her their to in at on with every it them him some lots all for from about into out up "
    "around back home there here this that these those each two three several many"
)
CONJUNCTIONS = word_set("and but or then")
# Subjects whose clause a conjunct verb continues with the same agreement ("I'm allergic and carry" -> "carries").
CLAUSE_SUBJECTS = word_set("i i'm i've xyouuserx")
THIRD_PERSON = {
    "am": "is",
    "are": "is",
    "have": "has",
    "do": "does",
    "go": "goes",
    "don't": "doesn't",
    "haven't": "hasn't",
    "aren't": "isn't",
    "ain't": "isn't",
    "were": "was",
    "weren't": "wasn't",
}
NOT_THIRD_PERSON = {third: base for base, third in THIRD_PERSON.items() if base not in ("am", "ain't", "were")}
NOT_THIRD_PERSON.update({"was": "were", "wasn't": "weren't"})


def third_person(verb: str) -> str:
    """The verb agreeing with a third-person singular subject: have -> has, carry -> carries, watch -> watches."""
    lower = verb.lower()
    if lower in THIRD_PERSON:
        return THIRD_PERSON[lower]
    if lower in MODALS or lower in PAST_FORMS or lower.endswith(("ed", "'d")) or not lower.isalpha():
        return verb
    if lower.endswith("y") and len(lower) > 2 and lower[-2] not in "aeiou":
        return verb[:-1] + "ies"
    if lower.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    return verb + "s"


def base_form(verb: str) -> str:
    """The verb agreeing with "you" after it agreed with a third-person subject: has -> have, carries -> carry."""
    lower = verb.lower()
    if lower in NOT_THIRD_PERSON:
        return NOT_THIRD_PERSON[lower]
    if lower in MODALS or lower in PAST_FORMS or not lower.endswith("s") or lower.endswith(("ss", "us", "is")):
        return verb
    if lower.endswith("ies") and len(lower) > 4:
        return verb[:-3] + "y"
    if lower.endswith(("sses", "shes", "ches", "xes", "zes", "oes")):
        return verb[:-2]
    return verb[:-1]


@dataclass(frozen=True)
class Voice:
    """How one speaker's pronouns are rewritten: each pronoun's replacement, and how its verb agrees."""

    pronouns: dict[str, str]  # lowercase pronoun -> replacement
    named: dict[str, str]  # the replacements once the subject has been named in the sentence ("my" -> "their")
    subjects: dict[str, Callable[[str], str]]  # pronouns after which the next verb agrees, and how


def _is_adverb(word: str) -> bool:
    lower = word.lower()
    return lower in ADVERBS or (lower.endswith("ly") and len(lower) > 4 and lower not in LY_VERBS)


def _match_case(replacement: str, at_start: bool) -> str:
    return replacement[:1].upper() + replacement[1:] if at_start else replacement


def rewrite(sentence: str, voice: Voice) -> str:
    """The sentence with the speaker's pronouns replaced and the verbs right after them agreeing."""
    tokens = list(WORD.finditer(sentence))
    out: list[str] = []
    position = 0
    named = False
    agree_at: int | None = None  # index of the token whose verb agrees with a replaced subject
    agree: Callable[[str], str] = str
    clause_agree: Callable[[str], str] | None = None  # how verbs after "and" agree, once a clause subject is replaced
    for index, token in enumerate(tokens):
        gap = sentence[position : token.start()]
        out.append(gap)
        word = token.group()
        lower = word.lower().replace("’", "'")
        if index == agree_at:
            if _is_adverb(word) and "," not in gap:
                agree_at = index + 1
                out.append(word)
            else:
                out.append(agree(word) if not gap.strip() else word)
            position = token.end()
            continue
        table = voice.named if named else voice.pronouns
        if lower in table:
            out.append(_match_case(table[lower], index == 0))
            named = True
            if lower in voice.subjects:
                agree_at, agree = index + 1, voice.subjects[lower]
            if lower in CLAUSE_SUBJECTS:
                clause_agree = voice.subjects.get(lower) or voice.subjects.get("i", str)
        elif clause_agree and _is_conjunct_verb(lower) and _after_conjunction(tokens, index, sentence):
            out.append(clause_agree(word))
        else:
            out.append(word)
        position = token.end()
    out.append(sentence[position:])
    return "".join(out)


def _is_conjunct_verb(word: str) -> bool:
    return word in CONJUNCT_VERBS or base_form(word) in CONJUNCT_VERBS


def _after_conjunction(tokens: list[re.Match[str]], index: int, sentence: str) -> bool:
    """Whether tokens[index] follows "and" and is followed by an object ("… and carry an EpiPen")."""
    if index == 0 or tokens[index - 1].group().lower() not in CONJUNCTIONS:
        return False
    if sentence[tokens[index - 1].end() : tokens[index].start()].strip():
        return False
    following = tokens[index + 1].group().lower() if index + 1 < len(tokens) else ""
    return following in OBJECT_OPENERS or _is_adverb(following)


def _user_voice() -> Voice:
    pronouns = {
        "i": "the user",
        "i'm": "the user is",
        "i've": "the user has",
        "i'll": "the user will",
        "i'd": "the user would",
        "my": "the user's",
        "me": "the user",
        "mine": "the user's",
        "myself": "the user",
        "we": "the user and others",
        "we're": "the user and others are",
        "we've": "the user and others have",
        "we'll": "the user and others will",
        "we'd": "the user and others would",
        "our": "the user's",
        "us": "the user and others",
        "ours": "the user's",
        "ourselves": "the user and others",
    }
    named = {**pronouns, "my": "their", "me": "them", "mine": "theirs", "myself": "themselves", "our": "their"}
    named.update({"us": "them", "ours": "theirs", "ourselves": "themselves"})
    return Voice(pronouns, named, {"i": third_person})


def _assistant_voice() -> Voice:
    pronouns = {
        "i": "the assistant",
        "i'm": "the assistant is",
        "i've": "the assistant has",
        "i'll": "the assistant will",
        "i'd": "the assistant would",
        "my": "the assistant's",
        "me": "the assistant",
        "myself": "itself",
        "you": "the user",
        "you're": "the user is",
        "you've": "the user has",
        "you'll": "the user will",
        "you'd": "the user would",
        "your": "the user's",
        "yours": "the user's",
        "yourself": "the user",
        "we": "the assistant and the user",
        "we'll": "the assistant and the user will",
        "we're": "the assistant and the user are",
        "our": "their",
        "us": "them",
    }
    # "you" is as often an object ("I'll remind you tomorrow") as a subject: only a known verb after it agrees
    return Voice(pronouns, pronouns, {"i": third_person, "you": _known_verb_agreeing})


def _listener_voice() -> Voice:
    pronouns = {
        "i": "you",
        "i'm": "you're",
        "i've": "you've",
        "i'll": "you'll",
        "i'd": "you'd",
        "my": "your",
        "me": "you",
        "mine": "yours",
        "myself": "yourself",
        "we": "you",
        "we're": "you're",
        "we've": "you've",
        "we'll": "you'll",
        "we'd": "you'd",
        "our": "your",
        "us": "you",
        "ours": "yours",
        "ourselves": "yourselves",
    }
    return Voice(pronouns, pronouns, {"i": _agreeing_with_you})


def _third_to_listener_voice() -> Voice:
    """A statement about the user told back to them; "the user" is first replaced by a placeholder word."""
    pronouns = {"xyouuserx": "you", "their": "your", "them": "you", "theirs": "yours", "themselves": "yourself"}
    return Voice(pronouns, pronouns, {"xyouuserx": base_form})


def _known_verb_agreeing(word: str) -> str:
    return third_person(word) if word.lower() in CONJUNCT_VERBS or word.lower() in THIRD_PERSON else word


def _agreeing_with_you(word: str) -> str:
    return {"am": "are", "was": "were", "wasn't": "weren't"}.get(word.lower(), word)


USER = _user_voice()
ASSISTANT = _assistant_voice()
LISTENER = _listener_voice()
THIRD_TO_LISTENER = _third_to_listener_voice()
THE_USERS = re.compile(r"\bthe user(?:'s|’s)(?=\W|$)", re.IGNORECASE)
THE_USER = re.compile(r"\bthe user\b", re.IGNORECASE)


def about_user(sentence: str) -> str:
    """What the user said of themselves, as a statement about the user: "I'm allergic" -> "The user is allergic"."""
    return rewrite(sentence.strip(), USER)


def about_assistant(sentence: str) -> str:
    """What the assistant said it will do, as a statement: "I'll remind you" -> "The assistant will remind the user"."""
    return rewrite(sentence.strip(), ASSISTANT)


def to_user(sentence: str) -> str:
    """A sentence told back to the user: their own words ("I like kiwis" -> "You like kiwis") or a statement about
    them ("The user has a dog" -> "You have a dog"); anything else unchanged."""
    sentence = sentence.strip()
    if THE_USER.search(sentence) is None:
        return rewrite(sentence, LISTENER)
    sentence = THE_USERS.sub(lambda match: "Your" if match.start() == 0 else "your", sentence)
    return rewrite(THE_USER.sub("Xyouuserx", sentence), THIRD_TO_LISTENER)
