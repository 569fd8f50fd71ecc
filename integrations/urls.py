"""The OpenAI-compatible memory proxy, mounted at /v1/ (memoryos_site/urls.py): an OpenAI client's base_url."""

from __future__ import annotations

from django.urls import path

from integrations import proxy

app_name = "integrations"

urlpatterns = [
    path("chat/completions", proxy.chat_completions, name="chat-completions"),
    path("models", proxy.models, name="models"),
]
