"""Rate limiting per token (or per operator): settings.API_RATE_LIMIT requests per period, counted in the cache."""

from __future__ import annotations

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from memory.models import ApiToken


class TokenRateThrottle(SimpleRateThrottle):
    scope = "api"

    def get_rate(self) -> str | None:
        # Read per request, not at import, so a deployment (or a test) can change it.
        return settings.API_RATE_LIMIT or None

    def get_cache_key(self, request, view) -> str | None:
        if isinstance(request.auth, ApiToken):
            ident = f"token-{request.auth.pk}"
        elif request.user and request.user.is_authenticated:
            ident = f"user-{request.user.pk}"
        else:
            ident = f"ip-{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
