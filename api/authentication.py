"""Bearer-token authentication: `Authorization: Bearer mos_<prefix>_<secret>` (see memory.services.api_tokens)."""

from __future__ import annotations

from rest_framework import authentication, exceptions

from memory.models import ApiToken
from memory.services.api_tokens import api_token_authenticate


class TokenUser:
    """The request's user when a token authenticated it: not a person, so it has no roles, only the token's scopes."""

    is_authenticated = True
    is_anonymous = False
    is_active = True
    pk = None

    def __init__(self, token: ApiToken) -> None:
        self.token = token

    def __str__(self) -> str:
        return f"API token {self.token.name} ({self.token.prefix})"


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = b"bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword:
            return None  # not ours: session authentication may still apply
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("The Authorization header must be 'Bearer <token>'.")
        try:
            raw = header[1].decode("ascii")
        except UnicodeError:
            raise exceptions.AuthenticationFailed("The token is not valid.") from None
        token = api_token_authenticate(raw=raw)
        if token is None:
            raise exceptions.AuthenticationFailed("The token is not valid, has expired or was revoked.")
        return TokenUser(token), token

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="memoryos"'
