"""Personal data under each tenant's policy: redaction before storing, masks for prompts and the console, the policy's
changes, reveals, and the re-scan of stored memory.

`do_not_store` categories are redacted by every write path before anything reaches a table or the embedder (turns,
chat, edits, promotion: they call `text_for_storage`). `mask_prompts` categories are masked in the prompt and the
message the model sees (`text_for_prompt`); `mask_console` ones where operators read memory, unless they reveal it
(`personal_data_reveal_record` audits that). A tenant without a policy row keeps everything.

A government-id pattern that runs out of time on a text withholds the lines it could not check (see
`Detector.find`); every such event is audited as `personal_data.pattern_timeout`, naming the pattern (never the text),
so the tenant's operators can see what was withheld and rewrite the pattern.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from memory.models import (
    ChatReply,
    EndUser,
    KnowledgeEntry,
    Page,
    PersonalDataAction,
    PersonalDataPolicy,
    PersonalDataScan,
    ProfileVersion,
    ScanStatus,
    Segment,
    Tenant,
)
from memory.models.privacy import ReviewMode, ReviewState
from memory.personal_data import (
    CATEGORIES,
    Detector,
    Finding,
    InvalidPattern,
    government_id_patterns_check,
    mask_findings,
)
from memory.selectors.personal_data import personal_data_policy_or_default
from memory.services.audit import Actor, audit_record
from memory.services.embedding_state import embedder_for_store
from memory.services.passages import page_passages_set, page_vectors_embed
from memory.services.personal_data_policy import detector_for
from memory.steps.types import ChainTopic, Facts, KnownFact, MemorySteps, PromotionFindings, TurnText, Usage
from memory.text import text_hash

POLICY_FIELDS = (*CATEGORIES, "phone_region", "government_id_patterns", "review_mode", "review_keywords")
SCAN_BATCH = 200


class PolicyError(ValueError):
    """The policy change cannot be made as asked; the message says why."""


def findings_in(*, tenant_id: int | None, detector: Detector, text: str, categories=CATEGORIES) -> list[Finding]:
    """The detector's findings in `text`; a government-id pattern that ran out of time there is audited (its
    findings withhold the lines it could not check).

    The audit entry is written once the caller's transaction commits (at once outside one): callers redact before
    they take the end user's lock, and the audit chain's lock must never be taken before it (legal_hold_place takes
    them in that order).
    """
    findings = detector.find(text, categories)
    timed_out = sorted({f.timed_out_pattern for f in findings if f.timed_out_pattern})
    if timed_out and tenant_id is not None:
        withheld = sum(f.end - f.start for f in findings if f.timed_out_pattern)
        detail = {"patterns": timed_out, "withheld_characters": withheld, "text_characters": len(text)}
        transaction.on_commit(lambda: _pattern_timeout_record(tenant_id, detail))
    return findings


def _pattern_timeout_record(tenant_id: int, detail: dict) -> None:
    audit_record(
        tenant=tenant_id,
        actor=Actor.system("personal-data detector"),
        action="personal_data.pattern_timeout",
        target_type="personal_data_policy",
        detail=detail,
    )


@dataclass(frozen=True)
class Redactor:
    """Redacts texts for one use (storing, prompting, the console) under one tenant's policy; callable on a text."""

    detector: Detector
    categories: frozenset[str]
    tenant_id: int | None = None  # whose audit trail records a government-id pattern's timeout

    def __call__(self, text: str) -> str:
        if not (self.categories and text):
            return text
        return mask_findings(text, self.find(text))

    def __bool__(self) -> bool:
        return bool(self.categories)

    def find(self, text: str) -> list[Finding]:
        return findings_in(tenant_id=self.tenant_id, detector=self.detector, text=text, categories=self.categories)


def redactor_for(policy: PersonalDataPolicy, action: str) -> Redactor:
    """The redactor of every category whose action is `action` or stricter."""
    return Redactor(detector_for(policy), policy.categories_at_least(action), policy.tenant_id)


def storage_redactor(*, tenant: Tenant | int) -> Redactor:
    """What every write path applies before storing or embedding text: the tenant's `do_not_store` categories."""
    return redactor_for(personal_data_policy_or_default(tenant=tenant), PersonalDataAction.DO_NOT_STORE)


def text_for_storage(*, tenant: Tenant | int, text: str) -> str:
    return storage_redactor(tenant=tenant)(text)


def prompt_redactor(*, tenant: Tenant | int) -> Redactor:
    """What the model must never see: `mask_prompts` and `do_not_store` categories (the latter for older rows)."""
    return redactor_for(personal_data_policy_or_default(tenant=tenant), PersonalDataAction.MASK_PROMPTS)


@dataclass(frozen=True)
class MaskedSteps:
    """Memory steps whose model reads every text masked by the tenant's prompt redactor: each page's two texts, the
    chain summary it continues and the profile it updates. What the steps answer is returned as the model wrote it
    (the caller redacts it for storage), so a masked value never reaches the model and never comes back from it."""

    steps: MemorySteps
    mask: Redactor

    @property
    def mode(self) -> str:
        return self.steps.mode

    @property
    def usage(self) -> Usage:
        return self.steps.usage

    def _turn(self, turn: TurnText) -> TurnText:
        return replace(turn, user_message=self.mask(turn.user_message), assistant_reply=self.mask(turn.assistant_reply))

    def _turns(self, turns: list[TurnText]) -> list[TurnText]:
        return [self._turn(turn) for turn in turns]

    def chain_and_topic(
        self, *, previous: TurnText | None, previous_chain_summary: str, page: TurnText, similarity: float | None
    ) -> ChainTopic:
        return self.steps.chain_and_topic(
            previous=previous and self._turn(previous),
            previous_chain_summary=self.mask(previous_chain_summary),
            page=self._turn(page),
            similarity=similarity,
        )

    def chain_and_topics(
        self,
        *,
        previous: TurnText | None,
        previous_chain_summary: str,
        pages: list[TurnText],
        similarities: list[float | None],
    ) -> list[ChainTopic]:
        return self.steps.chain_and_topics(
            previous=previous and self._turn(previous),
            previous_chain_summary=self.mask(previous_chain_summary),
            pages=self._turns(pages),
            similarities=similarities,
        )

    def profile_update(self, *, profile: str, pages: list[TurnText]) -> str:
        return self.steps.profile_update(profile=self.mask(profile), pages=self._turns(pages))

    def promotion_analyse(
        self, *, profile: str, pages: list[TurnText], known: tuple[KnownFact, ...] = ()
    ) -> PromotionFindings:
        return self.steps.promotion_analyse(
            profile=self.mask(profile), pages=self._turns(pages), known=self._known(known)
        )

    def knowledge_extract(self, *, pages: list[TurnText], known: tuple[KnownFact, ...] = ()) -> Facts:
        return self.steps.knowledge_extract(pages=self._turns(pages), known=self._known(known))

    def _known(self, known: tuple[KnownFact, ...]) -> tuple[KnownFact, ...]:
        return tuple(KnownFact(id=fact.id, text=self.mask(fact.text)) for fact in known)


def steps_for_prompts(steps: MemorySteps, *, tenant: Tenant | int) -> MemorySteps:
    """`steps` as the background updating steps (placement, promotion, profile re-derivation) must use them: a
    model's steps read texts masked as the chat prompt is (`prompt_redactor`, the same function), the offline
    steps as they are (heuristics that run in this process and send nothing anywhere; masking their input would
    strip from facts and summaries values the policy says to keep). Without mask-in-prompts categories, unchanged.
    """
    if steps.mode == "offline":
        return steps  # and no query for the policy
    mask = prompt_redactor(tenant=tenant)
    return MaskedSteps(steps, mask) if mask else steps


def console_redactor(*, tenant: Tenant | int) -> Redactor:
    """What operators see masked unless they reveal it: every category from `mask_console` up."""
    return redactor_for(personal_data_policy_or_default(tenant=tenant), PersonalDataAction.MASK_CONSOLE)


# --- Review: which new long-term memory waits for a reviewer -------------------------------------------------------


def review_reasons(policy: PersonalDataPolicy, text: str) -> list[str]:
    """Why `text` is sensitive under the policy: the categories found in it and the review keywords it holds."""
    findings = findings_in(tenant_id=policy.tenant_id, detector=detector_for(policy), text=text)
    found = sorted({finding.category for finding in findings})
    lowered = text.lower()
    keywords = [k for k in policy.review_keywords if re.search(rf"\b{re.escape(k.lower())}", lowered)]
    return found + [f"keyword: {k}" for k in keywords]


def review_state_for(policy: PersonalDataPolicy, text: str) -> str:
    """The review state a new fact or profile version starts in under the policy."""
    if policy.review_mode == ReviewMode.REVIEW_ALL:
        return ReviewState.PENDING
    if policy.review_mode == ReviewMode.REVIEW_SENSITIVE and review_reasons(policy, text):
        return ReviewState.PENDING
    return ReviewState.APPROVED


# --- The policy and reveals: audited ------------------------------------------------------------------------------


def _checked(values: dict) -> dict:
    unknown = set(values) - set(POLICY_FIELDS)
    if unknown:
        raise PolicyError(f"unknown policy fields: {', '.join(sorted(unknown))}")
    for category in CATEGORIES:
        if category in values and values[category] not in PersonalDataAction.values:
            raise PolicyError(f"{category}: choose one of {', '.join(PersonalDataAction.values)}")
    if "review_mode" in values and values["review_mode"] not in ReviewMode.values:
        raise PolicyError(f"review_mode: choose one of {', '.join(ReviewMode.values)}")
    if "phone_region" in values:
        import phonenumbers

        region = str(values["phone_region"]).strip().upper()
        if region not in phonenumbers.SUPPORTED_REGIONS:
            raise PolicyError(f"phone_region: {region!r} is not a region code such as GB, US or DE")
        values["phone_region"] = region
    if "government_id_patterns" in values:
        try:
            values["government_id_patterns"] = government_id_patterns_check(values["government_id_patterns"])
        except InvalidPattern as exc:
            raise PolicyError(f"government id patterns: {exc}") from None
    if "review_keywords" in values:
        keywords = [k.strip().lower() for k in values["review_keywords"] if k and k.strip()]
        if any(len(k) > 64 for k in keywords) or len(keywords) > 200:
            raise PolicyError("review keywords: at most 200, each at most 64 characters")
        values["review_keywords"] = list(dict.fromkeys(keywords))
    return values


def _snapshot(policy: PersonalDataPolicy) -> dict:
    return {name: getattr(policy, name) for name in POLICY_FIELDS}


@transaction.atomic
def personal_data_policy_update(
    *, tenant: Tenant, actor: Actor, reason: str, request_id: str = "", **values
) -> PersonalDataPolicy:
    """Change the tenant's policy (created on first change); the change is audited with before and after.

    Raises PolicyError for an unknown value or an unusable government-id pattern; nothing is saved then. A change
    applies to what is written from now on; `personal_data_scan_start` applies `do_not_store` to stored memory.
    """
    reason = (reason or "").strip()
    if not reason:
        raise PolicyError("a reason is required")
    values = _checked(dict(values))
    policy, _ = PersonalDataPolicy.objects.select_for_update().get_or_create(tenant=tenant)
    before = _snapshot(policy)
    for name, value in values.items():
        setattr(policy, name, value)
    policy.save()
    after = _snapshot(policy)
    if after != before:
        audit_record(
            tenant=tenant,
            actor=actor,
            action="personal_data.policy_update",
            target_type="personal_data_policy",
            target_id=policy.pk,
            reason=reason[:500],
            before=before,
            after=after,
            request_id=request_id,
        )
    return policy


def personal_data_reveal_record(
    *, end_user: EndUser, actor: Actor, reason: str, what: str, request_id: str = ""
) -> None:
    """Audit that an operator revealed personal data masked in the console; raises PolicyError without a reason."""
    reason = (reason or "").strip()
    if not reason:
        raise PolicyError("a reason is required to reveal personal data")
    audit_record(
        tenant=end_user.tenant_id,
        actor=actor,
        action="personal_data.reveal",
        end_user=end_user,
        target_type="end_user",
        target_id=end_user.pk,
        reason=reason[:500],
        detail={"what": what},
        request_id=request_id,
    )


# --- Re-scanning stored memory ------------------------------------------------------------------------------------


@transaction.atomic
def personal_data_scan_start(*, tenant: Tenant, actor: Actor, request_id: str = "") -> PersonalDataScan:
    """Queue a re-scan of the tenant's stored memory, one at a time: an unfinished scan is returned instead.

    A scan that made no progress (or never started) for longer than a task may run (CELERY_TASK_TIME_LIMIT) lost
    its worker or its message: it is marked failed, saying so, and a new one is queued (redacting is idempotent,
    so it starts over safely; a late delivery of the old one finds it failed and does nothing).
    """
    Tenant.objects.select_for_update().filter(pk=tenant.pk).first()
    unfinished = PersonalDataScan.objects.filter(tenant=tenant, status__in=[ScanStatus.QUEUED, ScanStatus.RUNNING])
    silent_since = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    silent = Q(status=ScanStatus.RUNNING, progressed_at__lt=silent_since)
    silent |= Q(status=ScanStatus.QUEUED, created_at__lt=silent_since)  # its message was lost: it never started
    unfinished.filter(silent).update(
        status=ScanStatus.FAILED, error="its worker stopped; a new scan was queued", finished_at=timezone.now()
    )
    scan = unfinished.order_by("-created_at").first()
    if scan is not None:
        return scan
    scan = PersonalDataScan.objects.create(tenant=tenant, requested_by=actor.label[:150], total=_scan_total(tenant))
    audit_record(
        tenant=tenant,
        actor=actor,
        action="personal_data.scan_start",
        target_type="personal_data_scan",
        target_id=scan.pk,
        request_id=request_id,
    )
    from memory.tasks import personal_data_rescan_task

    transaction.on_commit(lambda: personal_data_rescan_task.delay(scan.pk))
    return scan


def _tables(tenant_id: int) -> list[tuple[str, QuerySet, list[str]]]:
    """(name, the tenant's rows, the text columns) for every table that holds memory text."""
    return [
        ("page", Page.objects.filter(space__tenant_id=tenant_id), ["user_message", "assistant_reply"]),
        ("page_summaries", Page.objects.filter(space__tenant_id=tenant_id), ["chain_summary", "topic_summary"]),
        ("segment", Segment.objects.filter(space__tenant_id=tenant_id), ["summary"]),
        ("knowledge", KnowledgeEntry.objects.filter(end_user__tenant_id=tenant_id), ["text"]),
        ("profile", ProfileVersion.objects.filter(end_user__tenant_id=tenant_id), ["text"]),
        ("reply", ChatReply.objects.filter(space__tenant_id=tenant_id), ["user_message"]),
    ]


def _scan_total(tenant: Tenant) -> int:
    return sum(rows.count() for _, rows, _ in _tables(tenant.pk))


def personal_data_rescan(*, scan_id: int) -> PersonalDataScan | None:
    """Apply the tenant's `do_not_store` categories to its stored memory, in batches, recording progress.

    Changed texts are re-embedded (pages, segment summaries, facts) and keyword lists lose redacted values.
    Idempotent: only the run that moves the scan from queued to running does the work (a second delivery returns
    None), and redacting redacted text changes nothing. The audit trail is not rewritten: its entries are
    hash-chained evidence (an edit's before and after were already redacted when written under the policy).
    """
    now = timezone.now()
    claimed = PersonalDataScan.objects.filter(pk=scan_id, status=ScanStatus.QUEUED).update(
        status=ScanStatus.RUNNING, started_at=now, progressed_at=now
    )
    if not claimed:
        return None
    scan = PersonalDataScan.objects.get(pk=scan_id)
    redact = storage_redactor(tenant=scan.tenant_id)
    found: Counter = Counter()
    try:
        for name, rows, columns in _tables(scan.tenant_id):
            _scan_table(scan, name, rows, columns, redact, found)
    except Exception as exc:
        PersonalDataScan.objects.filter(pk=scan_id).update(
            status=ScanStatus.FAILED, error=str(exc)[:500], finished_at=timezone.now()
        )
        raise
    PersonalDataScan.objects.filter(pk=scan_id).update(
        status=ScanStatus.DONE, found=dict(found), finished_at=timezone.now()
    )
    scan.refresh_from_db()
    return scan


def _scan_table(scan: PersonalDataScan, name: str, rows, columns: list[str], redact: Redactor, found: Counter) -> None:
    last_id = 0
    while True:
        batch = list(rows.filter(pk__gt=last_id).order_by("pk")[:SCAN_BATCH])
        if not batch:
            return
        last_id = batch[-1].pk
        with transaction.atomic():
            said = [(row, {c: getattr(row, c) for c in columns}) for row in batch]
            changed = [(row, before) for row, before in said if _redact_row(row, columns, redact, found)]
            redacted = sum(_row_save(name, row, before) for row, before in changed)
            PersonalDataScan.objects.filter(pk=scan.pk).update(
                scanned=F("scanned") + len(batch),
                redacted=F("redacted") + redacted,
                found=dict(found),
                progressed_at=timezone.now(),
            )


def _redact_row(row, columns: list[str], redact: Redactor, found: Counter) -> bool:
    if not redact:
        return False
    changed = False
    for column in columns:
        text = getattr(row, column)
        findings = redact.find(text) if text else []
        if findings:
            found.update(f.category for f in findings)
            setattr(row, column, mask_findings(text, findings))
            changed = True
    return changed


def _row_save(name: str, row, before: dict[str, str]) -> int:
    """Write a redacted row and whatever was derived from its old text (vectors, keywords, a fact's hash).

    Only if its texts are still those read (`before`): a row edited meanwhile was written by a path that redacts
    under the policy already, and is not overwritten with older text. Returns the rows written (0 or 1).
    """
    embedder = embedder_for_store()
    update = dict.fromkeys(before)
    passages = None
    if name == "page" and row.embedding is not None:
        passages = page_vectors_embed(embedder=embedder, texts=[row.memory_text])
        row.embedding = passages[0].vector
        update["embedding"] = None
    if name == "page_summaries" and row.topic_embedding is not None and row.topic_summary:
        row.topic_embedding = embedder.embed([row.topic_summary])[0]
        update["topic_embedding"] = None
    if name == "segment":
        row.embedding = embedder.embed([row.summary])[0] if row.embedding is not None else None
        update["embedding"] = None
    if name in {"page_summaries", "segment"}:
        row.keywords = _keywords_kept(row)
        update["keywords"] = None
    if name == "knowledge":
        row.text_hash = text_hash(row.text)
        if _knowledge_merged(row, before):
            return 1
        row.embedding = embedder.embed([row.text])[0] if row.embedding is not None else None
        update.update(text_hash=None, embedding=None)
    unchanged = type(row).objects.filter(pk=row.pk, **before)
    written = unchanged.update(**{field: getattr(row, field) for field in update})
    if written and passages is not None:
        page_passages_set(pages=[row], vectors=passages)  # the redacted words leave the passages' vectors too
    return written


def _knowledge_merged(entry: KnowledgeEntry, before: dict[str, str]) -> bool:
    """A fact whose redacted text is now another fact of its store ("email is a@x" and "email is b@y" both read
    "email is [email]") is folded into that one: the survivor gains its source pages, and it is deleted."""
    # a user fact's assistant_id is None, which Django matches as IS NULL; django-stubs rejects None on a nullable
    # foreign key's _id lookup (typeddjango/django-stubs#3472)
    same = KnowledgeEntry.objects.filter(  # type: ignore[misc]
        end_user_id=entry.end_user_id, kind=entry.kind, assistant_id=entry.assistant_id, text_hash=entry.text_hash
    ).exclude(pk=entry.pk)
    survivor = same.order_by("id").first()
    if survivor is None or not KnowledgeEntry.objects.filter(pk=entry.pk, **before).exists():
        return False
    survivor.source_pages.add(*entry.source_pages.all())
    KnowledgeEntry.objects.filter(pk=entry.pk).delete()
    return True


def _keywords_kept(row) -> list[str]:
    """Keywords that hold no digits or @: a redacted value is made of those; ordinary keywords are kept."""
    return [k for k in row.keywords if not any(ch.isdigit() or ch == "@" for ch in k)]
