"""The chat's forms: a message (with its idempotency key), a correction of a remembered fact and what replaces one
that is no longer true."""

from __future__ import annotations

import uuid

from django import forms
from django.conf import settings

from chat.services import InvalidMessage, message_check
from memory.services.governance import MAX_MEMORY_TEXT
from memory.services.validity import MAX_NOTE


def new_idempotency_key() -> str:
    """A fresh key for one rendering of the message form: resubmitting that rendering answers once."""
    return uuid.uuid4().hex


class MessageForm(forms.Form):
    message = forms.CharField(
        label="Message",
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Write a message…", "autocomplete": "off"}),
        error_messages={"required": "Write a message first."},
    )
    idempotency_key = forms.CharField(widget=forms.HiddenInput, max_length=100)

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("initial", {}).setdefault("idempotency_key", new_idempotency_key())
        super().__init__(*args, **kwargs)
        self.max_chars = settings.MEMORY_MESSAGE_MAX_CHARS
        # The browser stops typing at the limit the server checks, and right-to-left text is laid out as written.
        self.fields["message"].widget.attrs |= {
            "maxlength": self.max_chars,
            "dir": "auto",
            "aria-describedby": "composer-count",
        }

    def clean_message(self) -> str:
        try:
            return message_check(self.cleaned_data["message"])
        except InvalidMessage as exc:
            raise forms.ValidationError(str(exc)) from None


class KnowledgeCorrectionForm(forms.Form):
    text = forms.CharField(
        label="Correct this fact",
        max_length=MAX_MEMORY_TEXT,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Write the corrected fact, or delete it instead."},
    )


class OutdatedForm(forms.Form):
    replacement = forms.CharField(label="What is true now (optional)", max_length=MAX_NOTE, required=False)
