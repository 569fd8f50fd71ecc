"""What the API accepts and answers. Input serializers validate shape and size; services validate meaning."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from memory.heat import segment_heat
from memory.importers import BUNDLE, FORMATS
from memory.models import (
    Assistant,
    AuditEntry,
    DataSubjectRequest,
    EndUser,
    ErasureReceipt,
    Escalation,
    ExportJob,
    HeatSample,
    JobStatus,
    KnowledgeEntry,
    Page,
    ProfileVersion,
    RequestChannel,
    RequestKind,
    RequestStatus,
    Segment,
)
from memory.retrieval.result import RetrievalResult
from memory.services.gdpr import receipt_verify
from memory.services.governance import MAX_MEMORY_TEXT
from memory.services.tenancy import EXTERNAL_ID
from memory.services.validity import MAX_NOTE

# --- Fields ---------------------------------------------------------------------------------------------------


class ExternalIdField(serializers.RegexField):
    """An end user's or assistant's external id, as the integrator chose it (`alice`, `ava`)."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("max_length", 128)
        kwargs.setdefault(
            "error_messages",
            {"invalid": "Use 1 to 128 letters, digits and _ . @ : + -, starting with a letter or digit."},
        )
        super().__init__(EXTERNAL_ID, **kwargs)


class MessageField(serializers.CharField):
    """A user message or reply: kept as sent (not trimmed), at most settings.MEMORY_MESSAGE_MAX_CHARS characters."""

    def __init__(self, **kwargs) -> None:
        # Read at each instantiation (serializers copy their fields per use), so the setting can change.
        kwargs.setdefault("max_length", settings.MEMORY_MESSAGE_MAX_CHARS)
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)


def reason_field(*, required: bool = True) -> serializers.CharField:
    return serializers.CharField(
        max_length=500, required=required, allow_blank=not required, help_text="Why: kept in the audit log."
    )


# --- Turns, retrieval, chat -----------------------------------------------------------------------------------


class TurnIn(serializers.Serializer):
    user = ExternalIdField(help_text="The end user's external id; created if new.")
    assistant = ExternalIdField(help_text="The assistant's external id; it must exist.")
    user_message = MessageField()
    assistant_reply = MessageField()
    at = serializers.DateTimeField(required=False, help_text="When the turn happened (ISO-8601); default: now.")


class TurnOut(serializers.Serializer):
    page_id = serializers.IntegerField()
    queued_updating = serializers.BooleanField(help_text="Whether a page left short-term memory and was queued.")


class RetrieveIn(serializers.Serializer):
    user = ExternalIdField()
    assistant = ExternalIdField()
    query = MessageField(allow_blank=True)
    include_prompt = serializers.BooleanField(default=False, help_text="Also return the assembled prompt.")
    record_visits = serializers.BooleanField(
        default=True, help_text="Count this retrieval in the heat of the segments that supplied pages."
    )


class ChatIn(serializers.Serializer):
    user = ExternalIdField(help_text="The end user's external id; created if new.")
    assistant = ExternalIdField()
    message = MessageField()


class ShortTermPageOut(serializers.ModelSerializer):
    class Meta:
        model = Page
        fields = ["id", "seq", "at", "user_message", "assistant_reply", "text"]


class RetrievedPageOut(serializers.Serializer):
    id = serializers.IntegerField(source="page.id")
    score = serializers.FloatField()
    text = serializers.CharField(source="page.text")
    at = serializers.DateTimeField(source="page.at")
    segment_id = serializers.IntegerField(source="page.segment_id")
    chain_summary = serializers.CharField(source="page.chain_summary")


class RetrievedSegmentOut(serializers.Serializer):
    id = serializers.IntegerField(source="segment.id")
    score = serializers.FloatField()
    summary = serializers.CharField(source="segment.summary")
    keywords = serializers.ListField(child=serializers.CharField(), source="segment.keywords")


class ProfileOut(serializers.ModelSerializer):
    class Meta:
        model = ProfileVersion
        fields = ["id", "number", "text", "created_at"]


class RetrievedKnowledgeOut(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=["user", "assistant"])
    text = serializers.CharField()
    score = serializers.FloatField(allow_null=True, help_text="Null for a pinned entry that retrieval did not rank.")
    pinned = serializers.BooleanField()
    valid_from = serializers.DateTimeField(allow_null=True, help_text="When it became true (the turn that said it).")
    replaced = serializers.CharField(
        allow_null=True, help_text="The fact it replaced, true until `replaced_until`; null when it replaced none."
    )
    replaced_until = serializers.DateTimeField(allow_null=True)


class EarlierPageOut(serializers.Serializer):
    page_id = serializers.IntegerField()
    until = serializers.DateTimeField(help_text="When it stopped being current.")
    slot = serializers.CharField(help_text='What changed ("drink", "home"); empty when a person marked it outdated.')
    value = serializers.CharField(help_text="The value now, when known.")
    replaced_by = serializers.DictField(allow_null=True, help_text='{"kind": "page" or "knowledge", "id": ...}')


class RetrieveOut(serializers.Serializer):
    query = serializers.CharField()
    query_keywords = serializers.ListField(child=serializers.CharField())
    short_term = ShortTermPageOut(many=True, help_text="Short-term memory, oldest first.")
    pages = RetrievedPageOut(many=True, help_text="Mid-term pages, best first.")
    segments = RetrievedSegmentOut(many=True)
    profile = ProfileOut(allow_null=True)
    knowledge = RetrievedKnowledgeOut(many=True, help_text="User and assistant knowledge, then pinned entries.")
    pinned_pages = ShortTermPageOut(many=True)
    earlier = EarlierPageOut(
        many=True,
        help_text="Turns found that are no longer current: a later turn or fact replaced them, or a person "
        "marked them outdated (a prompt quotes them as EARLIER).",
    )
    used = serializers.DictField(help_text="Ids and scores of everything retrieved (as a reply would record it).")
    prompt = serializers.CharField(required=False, help_text="Only with include_prompt: the assembled prompt.")


class ChatOut(serializers.Serializer):
    reply = serializers.CharField()
    memory_used = serializers.DictField()
    page_id = serializers.IntegerField(allow_null=True)
    mode = serializers.CharField(help_text="`llm`, or `offline` when no language model is configured.")


# --- End users and assistants -----------------------------------------------------------------------------------


class EndUserIn(serializers.Serializer):
    external_id = ExternalIdField()
    display_name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    email = serializers.EmailField(max_length=254, required=False, allow_blank=True, default="")


class EndUserOut(serializers.ModelSerializer):
    class Meta:
        model = EndUser
        fields = ["external_id", "display_name", "email", "is_active", "created_at", "last_active_at"]


class AssistantIn(serializers.Serializer):
    external_id = ExternalIdField()
    name = serializers.CharField(max_length=200)
    persona = serializers.CharField(max_length=MAX_MEMORY_TEXT, required=False, allow_blank=True, default="")


class AssistantOut(serializers.ModelSerializer):
    class Meta:
        model = Assistant
        fields = ["external_id", "name", "persona", "is_active", "created_at"]


class ActivationIn(serializers.Serializer):
    reason = reason_field(required=False)


# --- Memory items ---------------------------------------------------------------------------------------------


class PageOut(serializers.ModelSerializer):
    user = serializers.CharField(source="space.end_user.external_id")
    assistant = serializers.CharField(source="space.assistant.external_id")
    segment_id = serializers.IntegerField(allow_null=True)
    prev_page_id = serializers.IntegerField(allow_null=True)

    class Meta:
        model = Page
        fields = [
            "id",
            "user",
            "assistant",
            "seq",
            "at",
            "tier",
            "user_message",
            "assistant_reply",
            "text",
            "segment_id",
            "prev_page_id",
            "chain_summary",
            "topic_summary",
            "keywords",
            "analysed",
            "pinned",
            "valid_to",
            "outdated_note",
            "source",
            "created_at",
        ]
        read_only_fields = ["valid_to", "outdated_note"]  # changed by the outdated and current routes


class PagePatch(serializers.Serializer):
    pinned = serializers.BooleanField()
    reason = reason_field()


class SegmentOut(serializers.ModelSerializer):
    user = serializers.CharField(source="space.end_user.external_id")
    assistant = serializers.CharField(source="space.assistant.external_id")
    page_count = serializers.IntegerField()
    heat = serializers.SerializerMethodField()
    r_recency = serializers.SerializerMethodField()

    class Meta:
        model = Segment
        fields = [
            "id",
            "user",
            "assistant",
            "summary",
            "keywords",
            "page_count",
            "n_visit",
            "l_interaction",
            "r_recency",
            "heat",
            "last_touched_at",
            "pinned",
            "locked",
            "created_at",
            "updated_at",
        ]

    @extend_schema_field(OpenApiTypes.DOUBLE)
    def get_heat(self, segment: Segment) -> float:
        return segment_heat(segment, timezone.now()).value

    @extend_schema_field(OpenApiTypes.DOUBLE)
    def get_r_recency(self, segment: Segment) -> float:
        return segment_heat(segment, timezone.now()).r_recency


class SegmentPatch(serializers.Serializer):
    summary = serializers.CharField(max_length=MAX_MEMORY_TEXT, required=False)
    keywords = serializers.ListField(child=serializers.CharField(max_length=64), max_length=8, required=False)
    pinned = serializers.BooleanField(required=False)
    locked = serializers.BooleanField(required=False)
    reason = reason_field()

    def validate(self, attrs: dict) -> dict:
        if "keywords" in attrs and "summary" not in attrs:
            raise serializers.ValidationError({"summary": ["Send the summary with the keywords."]})
        return attrs


class HeatSampleOut(serializers.ModelSerializer):
    class Meta:
        model = HeatSample
        fields = ["at", "event", "n_visit", "l_interaction", "r_recency", "heat"]


class KnowledgeOut(serializers.ModelSerializer):
    user = serializers.CharField(source="end_user.external_id")
    assistant = serializers.CharField(source="assistant.external_id", allow_null=True)
    source_segment_id = serializers.IntegerField(allow_null=True)
    source_page_ids = serializers.SerializerMethodField()

    class Meta:
        model = KnowledgeEntry
        fields = [
            "id",
            "user",
            "assistant",
            "kind",
            "text",
            "pinned",
            "locked",
            "review_state",
            "valid_from",
            "valid_to",
            "superseded_by",
            "outdated_note",
            "source_ref",
            "source_segment_id",
            "source_page_ids",
            "created_at",
        ]
        # pending and rejected facts never reach a prompt; validity is changed by the outdated and current routes
        read_only_fields = ["review_state", "valid_from", "valid_to", "superseded_by", "outdated_note", "source_ref"]

    def get_source_page_ids(self, entry: KnowledgeEntry) -> list[int]:
        return [page.id for page in entry.source_pages.all()]


class KnowledgePatch(serializers.Serializer):
    text = serializers.CharField(max_length=MAX_MEMORY_TEXT, required=False)
    pinned = serializers.BooleanField(required=False)
    locked = serializers.BooleanField(required=False)
    reason = reason_field()


class ProfileVersionOut(serializers.ModelSerializer):
    user = serializers.CharField(source="end_user.external_id")
    source_segment_id = serializers.IntegerField(allow_null=True)

    class Meta:
        model = ProfileVersion
        fields = ["id", "user", "number", "text", "author", "locked", "review_state", "source_segment_id", "created_at"]


class ProfileVersionPatch(serializers.Serializer):
    locked = serializers.BooleanField()
    reason = reason_field()


# --- Review ---------------------------------------------------------------------------------------------------


class ReviewSourceOut(serializers.ModelSerializer):
    """A turn a pending fact or profile version was learnt from."""

    assistant = serializers.CharField(source="space.assistant.external_id")

    class Meta:
        model = Page
        fields = ["id", "assistant", "at", "user_message", "assistant_reply"]


class PendingKnowledgeOut(KnowledgeOut):
    sources = ReviewSourceOut(source="source_pages", many=True, read_only=True)

    class Meta(KnowledgeOut.Meta):
        fields = [*KnowledgeOut.Meta.fields, "sources"]


class PendingProfileVersionOut(ProfileVersionOut):
    sources = ReviewSourceOut(source="source_pages", many=True, read_only=True)

    class Meta(ProfileVersionOut.Meta):
        fields = [*ProfileVersionOut.Meta.fields, "sources"]


class ReviewIn(serializers.Serializer):
    decision = serializers.ChoiceField(
        choices=["approve", "reject"], help_text="approve: it may be used in prompts; reject: it never will be."
    )
    text = serializers.CharField(
        max_length=MAX_MEMORY_TEXT,
        required=False,
        help_text="approve only: the corrected text, approved as edited (redacted by the personal-data policy).",
    )
    reason = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        help_text="Why: kept in the audit log. Required to reject or to edit.",
    )


class ProfileIn(serializers.Serializer):
    text = serializers.CharField(max_length=MAX_MEMORY_TEXT)
    reason = reason_field()


class ForgetIn(serializers.Serializer):
    dry_run = serializers.BooleanField(
        default=False, help_text="true (or ?dry_run=1): only answer what forgetting would do; nothing changes."
    )
    reason = reason_field(required=False)

    def validate(self, attrs: dict) -> dict:
        if not attrs["dry_run"] and not (attrs.get("reason") or "").strip():
            raise serializers.ValidationError({"reason": ["A reason is required to forget."]})
        return attrs


class ForgetOut(serializers.Serializer):
    forgotten = serializers.DictField(
        child=serializers.IntegerField(), required=False, help_text="What was removed, re-derived and redacted."
    )
    dry_run = serializers.BooleanField(required=False, help_text="Present (true) when nothing was changed.")
    impact = serializers.DictField(
        child=serializers.IntegerField(), required=False, help_text="A dry run: what forgetting would do, by kind."
    )
    summary = serializers.CharField(required=False, help_text="A dry run: the impact in one sentence.")


class OutdatedIn(serializers.Serializer):
    reason = reason_field()
    replacement = serializers.CharField(
        max_length=MAX_NOTE, required=False, allow_blank=True, default="",
        help_text="What is true now, if known: kept beside the outdated item, which stays as history.",
    )  # fmt: skip


class CurrentIn(serializers.Serializer):
    reason = reason_field()


class EscalationIn(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["knowledge", "page"], help_text="The kind of the item flagged.")
    id = serializers.IntegerField(min_value=1, max_value=2**63 - 1, help_text="The item's id.")
    note = serializers.CharField(max_length=MAX_NOTE, help_text="What a supervisor should look at.")


class EscalationSettleIn(serializers.Serializer):
    resolution = serializers.CharField(max_length=MAX_NOTE, help_text="What was done, or why it needs nothing.")
    dismiss = serializers.BooleanField(default=False, help_text="true: dismissed rather than resolved.")


class EscalationOut(serializers.ModelSerializer):
    user = serializers.CharField(source="end_user.external_id")
    kind = serializers.CharField(source="target_type")
    item_id = serializers.IntegerField(source="target_id")
    flagged_by = serializers.CharField(source="flagged_by.username", allow_null=True, default=None)
    resolved_by = serializers.CharField(source="resolved_by.username", allow_null=True, default=None)

    class Meta:
        model = Escalation
        fields = [
            "id", "user", "kind", "item_id", "note", "state", "flagged_by", "created_at", "resolved_by", "resolution",
            "resolved_at",
        ]  # fmt: skip


class PauseIn(serializers.Serializer):
    assistant = ExternalIdField()
    paused = serializers.BooleanField()
    reason = reason_field()


class PauseOut(serializers.Serializer):
    assistant = serializers.CharField()
    paused = serializers.BooleanField()
    changed = serializers.BooleanField()


# --- Governance -----------------------------------------------------------------------------------------------


class AuditEntryOut(serializers.ModelSerializer):
    user = serializers.CharField(source="end_user.external_id", allow_null=True, default=None)
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)
    detail = serializers.JSONField()

    class Meta:
        model = AuditEntry
        fields = [
            "seq",
            "created_at",
            "actor_kind",
            "actor_id",
            "actor_label",
            "action",
            "user",
            "subject_id",
            "target_type",
            "target_id",
            "request_id",
            "reason",
            "before",
            "after",
            "detail",
            "erased",
            "hash",
        ]


class ErasureIn(serializers.Serializer):
    dry_run = serializers.BooleanField(default=True, help_text="true: only count what would be erased.")
    reason = reason_field(required=False)
    legal_basis = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="", help_text="Default: GDPR Art. 17."
    )

    def validate(self, attrs: dict) -> dict:
        if not attrs["dry_run"] and not (attrs.get("reason") or "").strip():
            raise serializers.ValidationError({"reason": ["A reason is required to erase."]})
        return attrs


class ErasureReceiptOut(serializers.ModelSerializer):
    counts = serializers.DictField(child=serializers.IntegerField())
    verified = serializers.SerializerMethodField()

    class Meta:
        model = ErasureReceipt
        fields = [
            "id",
            "subject_ref",
            "actor_kind",
            "actor_label",
            "legal_basis",
            "reason",
            "counts",
            "receipt_hash",
            "created_at",
            "verified",
        ]

    def get_verified(self, receipt: ErasureReceipt) -> bool:
        return receipt_verify(receipt)


class ErasureOut(serializers.Serializer):
    dry_run = serializers.BooleanField()
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="Rows per table.")
    receipt = ErasureReceiptOut(allow_null=True)


class ExportJobOut(serializers.ModelSerializer):
    user = serializers.CharField(source="end_user.external_id", allow_null=True, default=None)
    status = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = ExportJob
        fields = [
            "id",
            "user",
            "status",
            "progress",
            "sha256",
            "size_bytes",
            "error",
            "created_at",
            "finished_at",
            "expires_at",
            "download_url",
        ]

    @extend_schema_field(serializers.ChoiceField(choices=JobStatus.choices))
    def get_status(self, job: ExportJob) -> str:
        """ "retrying" for a running job whose worker stopped renewing its lease: never shown as running."""
        return job.live_status.value

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_download_url(self, job: ExportJob) -> str | None:
        """Only a finished bundle whose link has not expired is ready (the hourly expiry may not have run yet)."""
        if job.status != "done" or (job.expires_at and job.expires_at <= timezone.now()):
            return None
        request = self.context.get("request")
        path = f"/api/v1/exports/{job.pk}/download/"
        return request.build_absolute_uri(path) if request else path


# --- Retrieval ----------------------------------------------------------------------------------------------------


def _knowledge_out(result: RetrievalResult) -> list[dict]:
    ranked = [*result.user_knowledge, *result.assistant_knowledge]
    items = [{"entry": k.entry, "score": k.score} for k in ranked]
    seen = {k.entry.pk for k in ranked}
    items += [{"entry": entry, "score": None} for entry in result.pinned_knowledge if entry.pk not in seen]
    return [
        {"id": i["entry"].pk, "kind": i["entry"].kind, "text": i["entry"].text, "score": i["score"]}
        | {"pinned": i["entry"].pinned, "valid_from": i["entry"].valid_from}
        | {
            "replaced": getattr(i["entry"], "previous_text", None),
            "replaced_until": getattr(i["entry"], "previous_until", None),
        }
        for i in items
    ]


def _earlier_out(result: RetrievalResult) -> list[dict]:
    return [
        {"page_id": page_id, "until": r.at, "slot": r.slot, "value": r.value}
        | {"replaced_by": {"kind": r.by[0], "id": r.by[1]} if r.by else None}
        for page_id, r in result.earlier.items()
    ]


def retrieval_out(result: RetrievalResult) -> dict:
    """A retrieval result as /api/v1/retrieve/ (and the MCP tool memory_retrieve) answer it."""
    return {
        "query": result.query,
        "query_keywords": result.query_keywords,
        "short_term": ShortTermPageOut(result.short_term, many=True).data,
        "pages": RetrievedPageOut(result.pages, many=True).data,
        "segments": RetrievedSegmentOut(result.segments, many=True).data,
        "profile": ProfileOut(result.profile).data if result.profile else None,
        "knowledge": RetrievedKnowledgeOut(_knowledge_out(result), many=True).data,
        "pinned_pages": ShortTermPageOut(result.pinned_pages, many=True).data,
        "earlier": EarlierPageOut(_earlier_out(result), many=True).data,
        "used": result.used(),
    }


# --- Memory bundle import ---------------------------------------------------------------------------------------


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": True,
        "description": "The export's export.json, as its JSON schema (memory/schemas/memory-bundle-1.schema.json, "
        "docs/memory-bundle.md) describes it.",
    }
)
class BundleField(serializers.DictField):
    """A JSON object, checked against the bundle's schema by the import service (which names the first problem)."""


class ImportIn(serializers.Serializer):
    bundle = BundleField(
        help_text="The memory bundle: a GDPR export's export.json; or, with `format`, another memory system's export "
        '(mem0: `{"results": [...]}`; letta: the .af; memoryos: the user directory\'s files by name). '
        "docs/importing.md."
    )
    format = serializers.ChoiceField(
        choices=list(FORMATS),
        default=BUNDLE,
        help_text="What `bundle` holds: `bundle` (default), mem0, letta, memoryos.",
    )
    dry_run = serializers.BooleanField(default=False, help_text="true: only say what would be created.")
    assistant = ExternalIdField(
        required=False,
        allow_blank=True,
        default="",
        help_text="Import into this assistant (only for a bundle with memory of one assistant). Default: the "
        "assistant of the same external id as in the bundle.",
    )


class ImportOut(serializers.Serializer):
    dry_run = serializers.BooleanField()
    already_imported = serializers.BooleanField(help_text="This bundle's memory was imported before; nothing changed.")
    fingerprint = serializers.CharField(help_text="sha256 of the bundle's memory: the same memory has the same one.")
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="What was (or would be) created.")
    assistants = serializers.DictField(
        child=serializers.CharField(), help_text="The bundle's assistant -> this tenant's assistant."
    )
    skipped = serializers.DictField(
        child=serializers.IntegerField(), help_text="What the bundle holds but was not imported."
    )
    import_id = serializers.IntegerField(allow_null=True, help_text="The import's record (null for a dry run).")
    status = serializers.CharField(
        help_text="`done`, or `queued` for a large bundle imported in the background: poll GET /imports/{id}/."
    )


class ImportJobOut(serializers.Serializer):
    import_id = serializers.IntegerField(source="pk")
    user = serializers.CharField(source="end_user.external_id")
    status = serializers.CharField(help_text="queued, running, done or failed (staged: a console dry run).")
    progress = serializers.IntegerField(help_text="Percent done; 100 once done.")
    fingerprint = serializers.CharField()
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="What was created, once done.")
    error = serializers.CharField(help_text="Why it failed (empty otherwise).")
    created_at = serializers.DateTimeField()
    imported_at = serializers.DateTimeField(allow_null=True)


# --- Data-subject requests ---------------------------------------------------------------------------------------


class DataSubjectRequestIn(serializers.Serializer):
    kind = serializers.ChoiceField(choices=RequestKind.choices, help_text="What the data subject asks for.")
    user = serializers.CharField(max_length=200, help_text="The end user's external id, as the requester gave it.")
    requester = serializers.CharField(max_length=300, help_text="The requester's name and contact, as given.")
    channel = serializers.ChoiceField(choices=RequestChannel.choices, default=RequestChannel.API)
    received_at = serializers.DateTimeField(required=False, help_text="When it arrived (ISO-8601); default now.")
    identity_check = serializers.CharField(max_length=2000, required=False, default="", allow_blank=True)


class DataSubjectRequestStepIn(serializers.Serializer):
    note = serializers.CharField(
        max_length=2000, required=False, default="", allow_blank=True,
        help_text="The extension's or refusal's reason (required there), or a note.",
    )  # fmt: skip
    legal_basis = serializers.CharField(
        max_length=200, required=False, default="", allow_blank=True,
        help_text="Erasure only: the legal basis, or `forgotten` to link the items forgotten since it arrived.",
    )  # fmt: skip


class DataSubjectRequestFilter(serializers.Serializer):
    status = serializers.ChoiceField(choices=RequestStatus.choices, required=False)
    kind = serializers.ChoiceField(choices=RequestKind.choices, required=False)
    search = serializers.CharField(max_length=200, required=False, help_text="External id, name or requester.")


class DataSubjectRequestOut(serializers.ModelSerializer):
    user = serializers.CharField(source="external_id")
    deadline = serializers.DateTimeField()
    erasure_receipt = serializers.IntegerField(source="erasure_receipt_id", allow_null=True)

    class Meta:
        model = DataSubjectRequest
        fields = [
            "id", "kind", "user", "requester", "channel", "identity_check", "received_at", "due_at", "extended_due_at",
            "extension_reason", "deadline", "status", "outcome", "answered_at", "created_by_label", "export_job_id",
            "erasure_receipt", "fulfilled_by_entries", "created_at",
        ]  # fmt: skip
