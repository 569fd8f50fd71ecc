"""The console's forms: every change carries a reason, searches and filters are plain GET forms."""

from __future__ import annotations

from django import forms

from memory.services.governance import MAX_MEMORY_TEXT

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
