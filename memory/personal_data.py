"""Personal-data detection and redaction: pure, regex-class and fast (no model, no database, no network).

Categories: email addresses, phone numbers (the `phonenumbers` library's matcher, in the tenant's default region),
payment card numbers (13-19 digits passing the Luhn check), IBANs (the ISO 13616 mod-97 check), government ids
(regular expressions the tenant configures) and secrets (API keys of well-known shapes, and passwords written out
in a sentence). A value found by two detectors counts once, for the more specific one (a card number is not also
a phone number).

Masks name the category only, except a card's, which keeps the last four digits so that a reply can still say
"your card ending 4242".

Government-id patterns are the tenant's own regular expressions, so they run on RE2 (the `google-re2` package), whose
time is linear in the text whatever the pattern: no pattern can backtrack catastrophically. A pattern RE2 cannot run
(look-arounds, back-references) is refused when saved (`government_id_patterns_check`). One saved before that check
runs on the `regex` package with a time limit, and fails closed when it runs out (`Detector.find`: the text it could
not check is withheld), all such patterns of a text sharing one budget.
"""

from __future__ import annotations

import html
import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import phonenumbers
import re2
import regex

EMAIL, PHONE, CARD, IBAN, GOVERNMENT_ID, SECRET = "email", "phone", "card", "iban", "government_id", "secret"
CATEGORIES: tuple[str, ...] = (EMAIL, PHONE, CARD, IBAN, GOVERNMENT_ID, SECRET)
LABELS = {
    EMAIL: "Email addresses",
    PHONE: "Phone numbers",
    CARD: "Payment card numbers",
    IBAN: "IBANs",
    GOVERNMENT_ID: "Government ids",
    SECRET: "Secrets (API keys, passwords)",
}
# When two findings overlap, the earlier category wins (the more specific detector).
PRIORITY = {SECRET: 0, IBAN: 1, CARD: 2, EMAIL: 3, GOVERNMENT_ID: 4, PHONE: 5}
# A US social security number and a UK national insurance number: a new tenant's government ids.
DEFAULT_GOVERNMENT_ID_PATTERNS = (
    # area 001-899 but not 666, group 01-99, serial 0001-9999: spelled out, since RE2 has no look-ahead
    r"\b(?:00[1-9]|0[1-9]\d|[1-578]\d\d|6[0-57-9]\d|66[0-57-9])-(?:0[1-9]|[1-9]\d)-"
    r"(?:000[1-9]|00[1-9]\d|0[1-9]\d\d|[1-9]\d\d\d)\b",
    r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b",
)
MAX_PATTERN_LENGTH = 300
MAX_PATTERNS = 20
# For a pattern saved before RE2 checked patterns (it runs on `regex`): seconds it may spend on one text (or, after
# a timeout, on one line of it), and that all such patterns may spend together on the lines of one text.
GOVERNMENT_ID_TIMEOUT = 0.05
GOVERNMENT_ID_TEXT_BUDGET = 0.25
# What replaces text that a government-id pattern ran out of time on: it was not checked, so it is not kept.
WITHHELD_MASK = "[withheld: government-id check timed out]"
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is reported to whoever saved it, not logged by RE2 itself

EMAIL_RE = re.compile(r"(?<![\w.+'-])[A-Za-z0-9][A-Za-z0-9._%+'-]{0,63}@(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,24}\b")
# "name (at) example dot com", "name [at] example [dot] co.uk": an address written so that a plain match misses it.
OBFUSCATED_EMAIL_RE = re.compile(
    r"(?<![\w.+'-])(?P<local>[A-Za-z0-9][A-Za-z0-9._%+'-]{0,63})\s*[(\[{<]\s*at\s*[)\]}>]\s*"
    r"(?P<domain>[A-Za-z0-9-]{1,63}(?:(?:\s*[(\[{<]\s*dot\s*[)\]}>]\s*|\s+dot\s+|\.)[A-Za-z0-9-]{1,63})+)\b",
    re.IGNORECASE,
)
_DOT_WORD = re.compile(r"\s*[(\[{<]\s*dot\s*[)\]}>]\s*|\s+dot\s+", re.IGNORECASE)
# A card's digits may be grouped with spaces, hyphens or dots ("4242.4242.4242.4242").
CARD_RE = re.compile(r"(?<![\d.-])(?:\d[ .-]?){12,18}\d(?![\d-]|\.\d)")
IBAN_RE = re.compile(r"\b[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]{4}){2,7}(?: ?[A-Za-z0-9]{1,4})?\b")
# Characters that show nothing, used to split a value so that a plain match misses it; removed before matching.
INVISIBLE = frozenset(
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200d\u200e\u200f"
    "\u2060\u2061\u2062\u2063\u2064\u206a\u206b\u206c\u206d\u206e\u206f\u3164\ufeff\uffa0"
)
SECRET_RES = (
    re.compile(r"\bsk-(?:proj-|live-|test-)?[A-Za-z0-9_-]{20,}"),  # OpenAI, Stripe style
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),  # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}\b"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),  # Slack tokens
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),  # Google API keys
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
)
# "password: xyz", "pwd=xyz", "my password is xyz", "the passcode was 'xyz'": the value alone is the secret.
PASSWORD_RE = re.compile(
    r"\b(?:password|passwort|passwd|pwd|passcode|passphrase|pin code|api key|secret key)s?\b"
    r"(?P<sep>\s*[:=]\s*|\s+(?:is|was|is now|will be)\s*:?\s*)"
    r"(?P<quote>[\"'`]?)(?P<value>[^\s\"'`]{3,128})",
    re.IGNORECASE,
)
# Words that follow "password is" in ordinary sentences ("my password is wrong"): not a password.
NOT_A_PASSWORD = frozenset({
    "a", "an", "the", "my", "your", "his", "her", "our", "their", "its", "this", "that", "too", "not", "wrong",
    "incorrect", "invalid", "expired", "weak", "strong", "long", "short", "required", "needed", "missing", "same",
    "different", "correct", "right", "case", "sensitive", "empty", "blank", "reset", "changed", "locked", "stored",
    "saved", "hidden", "secret", "safe", "secure", "unsafe", "insecure", "old", "new", "mandatory", "optional",
    "shared", "simple", "easy", "hard", "complicated", "complex", "forgotten", "lost", "fine", "ok", "okay", "good",
    "bad", "great", "terrible", "there", "here", "what", "which", "stolen", "compromised", "leaked", "visible",
})  # fmt: skip
IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AT": 20, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29, "CH": 21, "CY": 28, "CZ": 24,
    "DE": 22, "DK": 18, "EE": 20, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GI": 23, "GL": 18, "GR": 27,
    "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IS": 26, "IT": 27, "KW": 30, "KZ": 20, "LB": 28, "LI": 21, "LT": 20,
    "LU": 20, "LV": 21, "MC": 27, "ME": 22, "MK": 19, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28,
    "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "TN": 24, "TR": 26,
    "UA": 29,
}  # fmt: skip
MIN_PHONE_DIGITS = 7


class InvalidPattern(ValueError):
    """A government-id pattern that cannot be used; the message says why."""


@dataclass(frozen=True)
class Finding:
    """One piece of personal data in a text: its category and where it lies (`text[start:end]` is the value)."""

    category: str
    start: int
    end: int
    value: str
    timed_out_pattern: str = ""  # set when a government-id pattern ran out of time here: the span is withheld

    @property
    def mask(self) -> str:
        if self.timed_out_pattern:
            return WITHHELD_MASK
        if self.category == CARD:
            return f"[card ending {_digits(self.value)[-4:]}]"
        return "[government id]" if self.category == GOVERNMENT_ID else f"[{self.category}]"


@dataclass(frozen=True)
class Detector:
    """The detectors configured for one tenant: its phone region and its government-id patterns (run by RE2)."""

    region: str = "GB"
    government_ids: tuple = ()  # RE2 patterns; `regex` ones for patterns saved before RE2 checked them

    @classmethod
    def configured(cls, *, region: str = "GB", government_id_patterns: Iterable[str] = ()) -> Detector:
        return cls(region=region.upper(), government_ids=tuple(_tenant_pattern(p) for p in government_id_patterns))

    def find(self, text: str, categories: Iterable[str] = CATEGORIES) -> list[Finding]:
        """Every finding of `categories` in `text`, in order, overlaps resolved for the more specific category.

        A government-id pattern that runs out of time (GOVERNMENT_ID_TIMEOUT) on the text fails closed: the text is
        checked again line by line, and each line it still runs out of time on (or that the text's budget leaves
        unchecked) becomes one finding with `timed_out_pattern` set, masked as WITHHELD_MASK. So under "do not
        store" an unchecked line is never stored, while the user's other lines are kept and redacted as usual; the
        caller learns of it from the finding (the services audit it, so the loss is never silent). Disabling the
        pattern instead would let the ids it exists to catch through, and holding the text for review would store
        it first; both fail open.
        """
        wanted = set(categories)
        plain, origin = normalised(text)
        found: list[Finding] = []
        for category, finder in self._finders():
            if category in wanted:
                found.extend(finder(plain))
        found = _without_overlaps(found)
        return found if origin is None else [_in_original(finding, text, origin) for finding in found]

    def redact(self, text: str, categories: Iterable[str]) -> str:
        """`text` with every finding of `categories` replaced by its mask."""
        categories = set(categories)
        if not categories or not text:
            return text
        return mask_findings(text, self.find(text, categories))

    def _finders(self):
        return (
            (SECRET, _secrets),
            (IBAN, _ibans),
            (CARD, _cards),
            (EMAIL, _emails),
            (GOVERNMENT_ID, self._government_ids),
            (PHONE, self._phones),
        )

    def _government_ids(self, text: str) -> list[Finding]:
        found: list[Finding] = []
        deadline = time.monotonic() + GOVERNMENT_ID_TEXT_BUDGET  # shared by the patterns that run on `regex`
        for pattern in self.government_ids:
            if not isinstance(pattern, regex.Pattern):
                found += _linear_matches(pattern, text)
                continue
            try:
                found += _matches(pattern, text, 0)
            except TimeoutError:
                found += _line_by_line(pattern, text, deadline)
        return found

    def _phones(self, text: str) -> list[Finding]:
        if sum(ch.isdigit() for ch in text) < MIN_PHONE_DIGITS:
            return []  # the matcher is the slowest detector: skip texts that cannot hold a number
        matcher = phonenumbers.PhoneNumberMatcher(text, self.region, leniency=phonenumbers.Leniency.VALID)
        return [Finding(PHONE, m.start, m.end, m.raw_string) for m in matcher]


def _linear(pattern: str):
    """`pattern` compiled by RE2: linear time in the text, whatever the pattern. Raises re2.error when RE2 cannot
    run it (a look-around, a back-reference)."""
    return re2.compile(pattern, _RE2_OPTIONS)


def _tenant_pattern(pattern: str):
    """A tenant's pattern as the detector runs it: by RE2, or (saved before RE2 checked patterns) by `regex`, whose
    matches stop at GOVERNMENT_ID_TIMEOUT."""
    try:
        return _linear(pattern)
    except re2.error:
        return regex.compile(pattern)


def _linear_matches(pattern, text: str) -> list[Finding]:
    return [
        Finding(GOVERNMENT_ID, m.start(), m.end(), m.group()) for m in pattern.finditer(text) if m.end() > m.start()
    ]


def _matches(pattern: regex.Pattern, text: str, offset: int) -> list[Finding]:
    """The pattern's government ids in `text` (which starts at `offset`); TimeoutError past GOVERNMENT_ID_TIMEOUT."""
    return [
        Finding(GOVERNMENT_ID, offset + m.start(), offset + m.end(), m.group())
        for m in pattern.finditer(text, timeout=GOVERNMENT_ID_TIMEOUT)
        if m.end() > m.start()
    ]


def _line_by_line(pattern: regex.Pattern, text: str, deadline: float) -> list[Finding]:
    """The pattern run on each line of a text it ran out of time on; a line it times out on again, and every line
    left once the text's budget (`deadline`) is spent, is one withheld finding."""
    found, offset = [], 0
    for line in text.splitlines(keepends=True):
        content = line.rstrip("\r\n")
        try:
            if time.monotonic() > deadline:
                raise TimeoutError
            found += _matches(pattern, content, offset)
        except TimeoutError:
            if content.strip():
                found.append(Finding(GOVERNMENT_ID, offset, offset + len(content), content, pattern.pattern))
        offset += len(line)
    return found


def normalised(text: str) -> tuple[str, list[int] | None]:
    """`text` as the detectors read it, and where each of its characters came from in `text` (None: unchanged).

    Each character is NFKC-normalised (full-width and other compatibility digits and letters become ASCII ones,
    a no-break space a space), every other space becomes a plain one, and invisible characters are dropped: what
    a person reads as one value is matched as one. ASCII text is left as it is, at no cost.
    """
    if text.isascii():
        return text, None
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if char in INVISIBLE or unicodedata.category(char) == "Cf":
            continue
        for piece in unicodedata.normalize("NFKC", char):
            chars.append(" " if piece.isspace() and piece not in "\r\n" else piece)
            origin.append(index)
    return "".join(chars), origin


def _in_original(finding: Finding, text: str, origin: list[int]) -> Finding:
    """The finding, found in the normalised text, placed on the original one (the value as it was written)."""
    if finding.start == finding.end:
        return finding
    start, end = origin[finding.start], origin[finding.end - 1] + 1
    value = finding.value if finding.category == CARD else text[start:end]  # a card's mask shows ASCII digits
    return Finding(finding.category, start, end, value, finding.timed_out_pattern)


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


# Each category's mask as Finding.mask writes it, to tell afterwards which categories a stored text had masked.
MASKS = {
    EMAIL: re.compile(r"\[email\]"),
    PHONE: re.compile(r"\[phone\]"),
    CARD: re.compile(r"\[card ending \d{4}\]"),
    IBAN: re.compile(r"\[iban\]"),
    GOVERNMENT_ID: re.compile(r"\[government id\]|" + re.escape(WITHHELD_MASK)),
    SECRET: re.compile(r"\[secret\]"),
}


def masked_categories(texts: Iterable[str]) -> list[str]:
    """The categories whose masks appear in `texts`, in CATEGORIES order (each once)."""
    joined = "\n".join(text for text in texts if text)
    return [category for category in CATEGORIES if MASKS[category].search(joined)]


def mask_findings(text: str, findings: Sequence[Finding]) -> str:
    """`text` with each finding (in order, not overlapping) replaced by its mask."""
    parts, position = [], 0
    for finding in findings:
        parts += [text[position : finding.start], finding.mask]
        position = finding.end
    parts.append(text[position:])
    return "".join(parts)


# A tag, a comment or a doctype; what lies between two of them is text. Inside <script> and <style> (the console's
# figures are JSON in a script tag, escaped as json_script escapes it) the text is raw: no entities to decode.
_MARKUP = re.compile(r"(<!--.*?-->|<[^>]*>)", re.DOTALL)
_RAW_TEXT_OPENS = re.compile(r"<(?:script|style)\b", re.IGNORECASE)


def mask_html(document: str, mask: Callable[[str], str]) -> str:
    """`document` (HTML) with `mask` applied to its text: between tags, and inside script and style elements.
    Tags and their attributes are left as they are (links and form values carry ids, not memory)."""
    parts = _MARKUP.split(document)
    raw = False
    for index, part in enumerate(parts):
        if index % 2:  # a tag
            raw = bool(_RAW_TEXT_OPENS.match(part))
        elif raw:
            parts[index] = mask(part)
        elif part.strip():
            text = html.unescape(part)
            masked = mask(text)
            if masked != text:
                parts[index] = html.escape(masked, quote=False)
    return "".join(parts)


def mask_json(data, mask: Callable[[str], str], *, keep: frozenset[str] = frozenset()):
    """JSON-like `data` with `mask` applied to every string value, except those of the keys in `keep` (ids)."""
    if isinstance(data, str):
        return mask(data)
    if isinstance(data, list | tuple):
        return [mask_json(item, mask, keep=keep) for item in data]
    if isinstance(data, dict):
        return {
            key: value if key in keep and isinstance(value, str) else mask_json(value, mask, keep=keep)
            for key, value in data.items()
        }
    return data


def _without_overlaps(found: list[Finding]) -> list[Finding]:
    kept: list[Finding] = []
    # a withheld span (a pattern timed out on it) wins over everything: what it covers was not checked
    for finding in sorted(
        found, key=lambda f: (-1 if f.timed_out_pattern else PRIORITY[f.category], f.start - f.end, f.start)
    ):
        if all(finding.end <= other.start or finding.start >= other.end for other in kept):
            kept.append(finding)
    return sorted(kept, key=lambda f: f.start)


def _emails(text: str) -> list[Finding]:
    found = [Finding(EMAIL, m.start(), m.end(), m.group()) for m in EMAIL_RE.finditer(text)] if "@" in text else []
    lowered = text.lower()
    if "at" in lowered and ("(" in text or "[" in text or "{" in text or "<" in text):
        for match in OBFUSCATED_EMAIL_RE.finditer(text):
            address = f"{match.group('local')}@{_DOT_WORD.sub('.', match.group('domain'))}"
            if EMAIL_RE.fullmatch(address):
                found.append(Finding(EMAIL, match.start(), match.end(), match.group()))
    return found


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of a string of digits (payment card numbers end with it)."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _cards(text: str) -> list[Finding]:
    found = []
    for match in CARD_RE.finditer(text):
        digits = _digits(match.group())
        # issuers' numbers start with 2-6 (Mastercard, Visa, Amex, Discover, UnionPay...); all-equal digits are filler
        if 13 <= len(digits) <= 19 and digits[0] in "23456" and len(set(digits)) > 1 and luhn_valid(digits):
            found.append(Finding(CARD, match.start(), match.end(), match.group()))
    return found


def iban_valid(iban: str) -> bool:
    """Whether `iban` (no spaces) is of a country that uses IBANs, has its length and passes the mod-97 check."""
    if IBAN_LENGTHS.get(iban[:2]) != len(iban):
        return False  # a country that has no IBANs, or the wrong length for its country
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


def _ibans(text: str) -> list[Finding]:
    found = []
    for match in IBAN_RE.finditer(text):
        # the pattern can run on into the next word ("GB82 WEST ... 32 THEN"): shorten it until the check passes
        raw = match.group()
        for end in range(len(raw), 14, -1):
            candidate = raw[:end].rstrip()
            if iban_valid(candidate.replace(" ", "").upper()):
                found.append(Finding(IBAN, match.start(), match.start() + len(candidate), candidate))
                break
    return found


def _secrets(text: str) -> list[Finding]:
    found = [Finding(SECRET, m.start(), m.end(), m.group()) for pattern in SECRET_RES for m in pattern.finditer(text)]
    for match in PASSWORD_RE.finditer(text):
        value = match.group("value").rstrip(".,;:!?)")
        quoted_or_assigned = bool(match.group("quote")) or match.group("sep").strip()[:1] in {":", "="}
        if len(value) >= 3 and (quoted_or_assigned or value.lower() not in NOT_A_PASSWORD):
            start = match.start("value")
            found.append(Finding(SECRET, start, start + len(value), value))
    return found


def government_id_patterns_check(patterns: Iterable[str]) -> list[str]:
    """The patterns, stripped, each compiled once to prove it; raises InvalidPattern naming the bad one (too long,
    not a regular expression, one RE2 cannot run in linear time, or matching empty text)."""
    checked = [p.strip() for p in patterns if p and p.strip()]
    if len(checked) > MAX_PATTERNS:
        raise InvalidPattern(f"at most {MAX_PATTERNS} patterns")
    for pattern in checked:
        if len(pattern) > MAX_PATTERN_LENGTH:
            raise InvalidPattern(f"the pattern {pattern[:40]!r}… is longer than {MAX_PATTERN_LENGTH} characters")
        try:
            regex.compile(pattern)
        except regex.error as exc:
            raise InvalidPattern(f"the pattern {pattern!r} is not a valid regular expression: {exc}") from None
        try:
            compiled = _linear(pattern)
        except re2.error as exc:
            raise InvalidPattern(
                f"the pattern {pattern!r} cannot be run in linear time ({_re2_reason(exc)}): patterns run on RE2, "
                "which has no look-ahead or look-behind (?= (?! (?<= (?<!, back-references (\\1) or possessive "
                "repeats; rewrite it without them (e.g. list the allowed digits instead of a look-ahead)"
            ) from None
        if compiled.fullmatch(""):
            raise InvalidPattern(f"the pattern {pattern!r} matches empty text, so it would match everywhere")
    return checked


def _re2_reason(exc: Exception) -> str:
    reason = exc.args[0] if exc.args else exc
    return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
