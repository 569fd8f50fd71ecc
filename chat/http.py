"""The request type of views behind django-htmx's middleware, which sets `request.htmx` on every request."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """An HttpRequest with `htmx` (django-htmx documents this type for annotating views); for type checkers only."""

    htmx: HtmxDetails
