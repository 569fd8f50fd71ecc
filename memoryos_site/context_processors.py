"""Values every template may show."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def memoryos(request: HttpRequest) -> dict:
    return {"offline_mode": not settings.LLM_BASE_URL}
