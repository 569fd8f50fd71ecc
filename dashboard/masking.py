"""One masking path for everything an operator reads in the console: the whole HTML response, after the template.

A view that renders memory (a page, a fact, a search result, the prompt of a context preview, a figure's labels)
needs no filter of its own, so none can forget it: `console_or_404` marks the request with the operator's Console,
and this middleware masks the text of the response with its masker (the tenant's mask-in-console categories, and
stricter ones). The only way to the raw value stays the audited reveal (`console_reveal`).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from memory.personal_data import mask_html

CONSOLE_ATTRIBUTE = "memoryos_console"


class ConsoleMaskingMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        console = getattr(request, CONSOLE_ATTRIBUTE, None)
        if console is None or not console.masks_anything or response.streaming:
            return response
        if not response.get("Content-Type", "").startswith("text/html"):
            return response
        charset = response.charset
        response.content = mask_html(response.content.decode(charset), console.masker).encode(charset)
        return response
