"""The console's forms: every change carries a reason, searches and filters are plain GET forms."""

from __future__ import annotations

from django import forms
from django.conf import settings

from memory.bundles import BundleInvalid
from memory.importers import BUNDLE, FORMATS, bundle_from_bytes
from memory.models import PersonalDataAction, RequestChannel, RequestKind, RequestStatus, ReviewMode, Role
from memory.personal_data import CATEGORIES, LABELS
from memory.services.governance import MAX_MEMORY_TEXT
from memory.services.validity import MAX_NOTE

USER_SORT_CHOICES = [("recent", "Last active"), ("heat", "Hottest memory"), ("name", "Name")]
OVERVIEW_DAYS = [(7, "7 days"), (30, "30 days"), (90, "90 days")]
LEGAL_BASES = [
    "GDPR Art. 17(1)(a): no longer necessary",
    "GDPR Art. 17(1)(b): consent withdrawn",
    "GDPR Art. 17(1)(c): objection to processing",
    "GDPR Art. 17(1)(d): unlawfully processed",
    "GDPR Art. 17(1)(e): legal obligation",
]


class ReasonForm(forms.Form):
    reason = forms.CharField(
        max_length=500,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "e.g. customer asked us to correct this"}),
        help_text="Required. Kept in the audit log with your name.",
    )


class KnowledgeEditForm(ReasonForm):
    text = forms.CharField(max_length=MAX_MEMORY_TEXT, widget=forms.Textarea(attrs={"rows": 3}), label="Fact")
    field_order = ["text", "reason"]


class OutdatedForm(ReasonForm):
    replacement = forms.CharField(
        max_length=MAX_NOTE,
        required=False,
        label="Replacing value",
        widget=forms.TextInput(attrs={"placeholder": "e.g. tea"}),
        help_text="Optional: what is true now. Shown beside the outdated one; the history stays readable.",
    )
    field_order = ["replacement", "reason"]


class EscalationForm(forms.Form):
    note = forms.CharField(
        max_length=MAX_NOTE,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "e.g. the customer says this is no longer true"}),
        help_text="What a supervisor should look at. Kept in the audit log with your name.",
    )


class EscalationSettleForm(forms.Form):
    resolution = forms.CharField(max_length=MAX_NOTE, widget=forms.Textarea(attrs={"rows": 2}), label="Resolution")
    dismiss = forms.BooleanField(required=False)


class KeywordsField(forms.CharField):
    """A list of keywords, shown and typed comma-separated."""

    def prepare_value(self, value):
        return ", ".join(value) if isinstance(value, list) else value

    def clean(self, value) -> list[str]:
        return [k.strip() for k in super().clean(value).split(",") if k.strip()]


class SegmentEditForm(ReasonForm):
    summary = forms.CharField(max_length=MAX_MEMORY_TEXT, widget=forms.Textarea(attrs={"rows": 3}))
    keywords = KeywordsField(max_length=600, required=False, help_text="Comma-separated, at most 8.")
    field_order = ["summary", "keywords", "reason"]


class ProfileEditForm(ReasonForm):
    text = forms.CharField(
        max_length=MAX_MEMORY_TEXT, widget=forms.Textarea(attrs={"rows": 8}), label="Profile (saved as a new version)"
    )
    field_order = ["text", "reason"]


class UserSearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search")
    sort = forms.ChoiceField(required=False, choices=USER_SORT_CHOICES)


class MemorySearchForm(forms.Form):
    """A search of every user's memory in the tenant."""

    q = forms.CharField(required=False, max_length=200, label="Search memory")


CASE_TABS = [
    ("short-term", "Short-term"),
    ("mid-term", "Mid-term"),
    ("long-term", "Long-term"),
    ("chats", "Chats"),
    ("audit", "Audit"),
    ("search", "Search"),
]


class CaseForm(forms.Form):
    """The case view's query string: which tab, which assistant's memory, a search text and a page of a list."""

    tab = forms.ChoiceField(required=False, choices=CASE_TABS)
    assistant = forms.CharField(required=False, max_length=100)
    q = forms.CharField(required=False, max_length=200, label="Search this user's memory")
    page = forms.IntegerField(required=False, min_value=1)


class PreviewForm(forms.Form):
    q = forms.CharField(max_length=2000, label="Question", widget=forms.TextInput(attrs={"autocomplete": "off"}))
    assistant = forms.CharField(required=False, widget=forms.HiddenInput)


class OverviewForm(forms.Form):
    days = forms.TypedChoiceField(choices=OVERVIEW_DAYS, coerce=int, required=False, empty_value=30)


class DiffForm(forms.Form):
    a = forms.IntegerField(required=False, min_value=1, label="From version")
    b = forms.IntegerField(required=False, min_value=1, label="To version")


class AuditFilterForm(forms.Form):
    user = forms.CharField(required=False, max_length=200, help_text="Name, email, external id or id")
    actor = forms.CharField(
        required=False, max_length=200, help_text="An operator, a token, an end user (name or external id), or a kind"
    )
    action = forms.ChoiceField(required=False)
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), label="From")
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}), label="To")
    hide_reads = forms.BooleanField(required=False, label="Hide reads", help_text="Memory reads and replies' memory")

    def __init__(self, *args, actions: list[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["action"].choices = [("", "Any action")] + [(a, a) for a in actions]

    def clean(self) -> dict:
        cleaned = super().clean()
        since, until = cleaned.get("since"), cleaned.get("until")
        if since and until and since > until:
            cleaned.pop("since")  # an inverted range narrows nothing: say so rather than show no entries
            self.add_error(
                "until",
                f"“To” ({until:%-d %b %Y}) is before “From” ({since:%-d %b %Y}), so no date range is applied.",
            )
        return cleaned


class ErasureForm(forms.Form):
    legal_basis = forms.CharField(
        max_length=200,
        widget=forms.TextInput(attrs={"list": "legal-bases"}),
        help_text="The ground for erasure; it is written on the receipt.",
    )
    reason = forms.CharField(required=False, max_length=500, widget=forms.Textarea(attrs={"rows": 2}))
    confirm = forms.CharField(max_length=200, label="Type the user's external id to confirm")

    def __init__(self, *args, external_id: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.external_id = external_id

    def clean_confirm(self) -> str:
        if self.cleaned_data["confirm"].strip() != self.external_id:
            raise forms.ValidationError(f"Type {self.external_id} exactly to confirm the erasure.")
        return self.cleaned_data["confirm"]


IMPORTED_USER = "imported"  # the bundle names a user of the source; the import writes into the one it is given


class BundleImportForm(forms.Form):
    """A memory bundle to import (export.json or the export's zip), and the assistant it goes to."""

    format = forms.ChoiceField(
        choices=list(FORMATS.items()),
        initial=BUNDLE,
        required=False,  # a form posted without it (older clients, scripts) imports a bundle
        label="Format",
        help_text="A MemoryOS bundle, or another memory system's export (see docs/importing.md).",
    )
    bundle = forms.FileField(
        label="Memory bundle",
        help_text="The <code>export.json</code> of a MemoryOS export, or the export's zip; a mem0 export's JSON, a "
        "Letta <code>.af</code>, or a zip of a reference MemoryOS user directory.",
        widget=forms.ClearableFileInput(attrs={"accept": ".json,.zip,.af,application/json,application/zip"}),
    )
    assistant = forms.ChoiceField(required=False, label="Import into")

    def __init__(self, *args, assistants: list[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["assistant"].choices = [("", "The assistant the bundle names"), *((a, a) for a in assistants)]

    def clean_bundle(self) -> dict:
        """The parsed bundle; a file past MEMORY_IMPORT_MAX_BYTES is refused after reading one byte past it."""
        upload, source_format = self.cleaned_data["bundle"], self.cleaned_data.get("format") or BUNDLE
        raw = upload.read(settings.MEMORY_IMPORT_MAX_BYTES + 1)
        try:
            return bundle_from_bytes(source_format, raw, external_id=IMPORTED_USER)
        except BundleInvalid as exc:
            what = "bundle" if source_format == BUNDLE else f"{source_format} export"
            raise forms.ValidationError(f"The {what} is refused: {exc}") from None


def _limit(label: str, unit: str = "days", help_text: str = "") -> forms.IntegerField:
    return forms.IntegerField(
        required=False, min_value=1, max_value=36500, label=f"{label} ({unit})",
        help_text=help_text or "Empty: kept for ever.",
        widget=forms.NumberInput(attrs={"placeholder": "keep for ever"}),
    )  # fmt: skip


class RetentionPolicyForm(forms.Form):
    """A tenant's maximum age per tier; each field is named after its tier (memory.models.retention)."""

    pages = _limit("Short- and mid-term pages")
    knowledge = _limit("Long-term facts")
    profile_versions = _limit("Profile versions")
    chat_replies = _limit("Chat reply records", help_text="What each reply used and cost. Empty: kept for ever.")
    audit_entries = _limit("Audit log", help_text="Removed oldest first; the chain stays verifiable. Empty: kept.")
    inactive_users = _limit(
        "Erase users inactive for", "months", "Erased with a receipt, as a manual erasure. Empty: never."
    )


class AssistantRetentionForm(forms.Form):
    """What an assistant's own policy may set: its pages, facts and reply records; empty follows the tenant."""

    pages = _limit("Short- and mid-term pages", help_text="Empty: the tenant's limit applies.")
    knowledge = _limit("Facts about the assistant", help_text="Empty: the tenant's limit applies.")
    chat_replies = _limit("Chat reply records", help_text="Empty: the tenant's limit applies.")


class LegalHoldForm(forms.Form):
    reason = forms.CharField(
        max_length=500,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "e.g. litigation hold, case 2026-114"}),
        help_text="Required. Kept on the hold and in the audit log with your name.",
    )


class PersonalDataPolicyForm(ReasonForm):
    """A tenant's personal-data policy: an action per category, the phone region, government-id patterns, review."""

    phone_region = forms.CharField(
        max_length=2, label="Phone region", help_text="Where numbers without +country are dialled: GB, US, DE…"
    )
    government_id_patterns = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        label="Government-id patterns",
        help_text=(
            "One regular expression per line (Python syntax), checked when saved: a pattern that backtracks "
            "catastrophically, such as (a+)+, is refused."
        ),
    )
    review_mode = forms.ChoiceField(choices=ReviewMode.choices, label="Review of new long-term memory")
    review_keywords = KeywordsField(
        max_length=4000, required=False, label="Review keywords", help_text="Comma-separated, e.g. diagnosis, therapy."
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        categories = {c: forms.ChoiceField(choices=PersonalDataAction.choices, label=LABELS[c]) for c in CATEGORIES}
        reason = self.fields.pop("reason")
        self.fields = {**categories, **self.fields, "reason": reason}

    def clean_government_id_patterns(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["government_id_patterns"].splitlines() if line.strip()]

    def policy_values(self) -> dict:
        return {name: value for name, value in self.cleaned_data.items() if name != "reason"}


class ReviewForm(forms.Form):
    """A reviewer's decision on a pending fact or profile version; editing or rejecting needs a reason."""

    decision = forms.ChoiceField(
        choices=[("approve", "Approve"), ("reject", "Reject"), ("reject_forget", "Reject and forget the source turns")]
    )
    text = forms.CharField(max_length=MAX_MEMORY_TEXT, required=False, widget=forms.Textarea(attrs={"rows": 3}))
    reason = forms.CharField(max_length=500, required=False, widget=forms.Textarea(attrs={"rows": 2}))


# --- Data-subject requests ---------------------------------------------------------------------------------------


class DataSubjectRequestForm(forms.Form):
    """A request as it arrived: who, about whom, how, when, and how their identity was checked."""

    kind = forms.ChoiceField(choices=RequestKind.choices, label="Request")
    external_id = forms.CharField(max_length=200, label="User's external id", help_text="As the requester gave it.")
    requester = forms.CharField(max_length=300, label="Requester", help_text="Name and contact, as given.")
    channel = forms.ChoiceField(choices=RequestChannel.choices)
    received_at = forms.DateTimeField(
        label="Received", widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M")
    )
    identity_check = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}), label="Identity check",
        help_text="How identity was checked (not the document's number).",
    )  # fmt: skip


class DataSubjectRequestFilter(forms.Form):
    status = forms.ChoiceField(choices=[("", "Any status"), *RequestStatus.choices], required=False)
    kind = forms.ChoiceField(choices=[("", "Any request"), *RequestKind.choices], required=False)
    q = forms.CharField(max_length=200, required=False, label="User", help_text="External id or display name.")


class DataSubjectRequestStepForm(forms.Form):
    """The note of a step: the extension's or refusal's reason, the fulfilment's or withdrawal's note."""

    note = forms.CharField(max_length=2000, required=False, widget=forms.Textarea(attrs={"rows": 2}))
    legal_basis = forms.CharField(max_length=200, required=False)


# --- The team -----------------------------------------------------------------------------------------------------


class InvitationForm(forms.Form):
    email = forms.EmailField(max_length=254, help_text="A new address gets an email with a link to set a password.")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.AGENT)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
