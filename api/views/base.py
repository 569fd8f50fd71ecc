"""What every API view shares: scope checks, the caller's tenant and actor, and input validation.

API views are DRF generic class views rather than the function views of the HTML screens (STYLE 8): generics are
what drf-spectacular reads to document pagination, query parameters and path types, and what DRF paginates.
They stay thin: validate, call one selector or service, serialize.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import ObjectDoesNotExist
from rest_framework import generics
from rest_framework.exceptions import NotFound
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from api.access import Principal, principal_of
from api.permissions import HasScope
from memory.models import Tenant
from memory.not_found import not_found_message
from memory.personal_data import mask_json
from memory.services.audit import Actor
from memory.services.personal_data import console_redactor

T = TypeVar("T")


def get_or_not_found(selector: Callable[..., T], /, **lookup) -> T:
    """`selector(**lookup)`, or a 404 ("No such user.", memory.not_found) when it raises its model's DoesNotExist."""
    try:
        return selector(**lookup)
    except ObjectDoesNotExist as missing:
        raise NotFound(not_found_message(missing)) from None


# Values that name things rather than say them: an operator needs them unmasked to ask for the thing again.
IDENTIFIER_KEYS = frozenset(
    {"user", "external_id", "assistant", "url", "next", "previous", "request_id", "secret", "event_id"}
)


class ApiView(generics.GenericAPIView):
    permission_classes = [HasScope]
    required_scopes: dict[str, str] = {}

    def finalize_response(self, request, response, *args, **kwargs):
        """An operator's browser session reads memory as the console shows it: the tenant's mask-in-console personal
        data masked (the audited reveal in the console is the way to the raw value). Tokens read what is stored."""
        response = super().finalize_response(request, response, *args, **kwargs)
        principal = getattr(request, "_memoryos_principal", None)  # set once the caller was authenticated
        if principal is not None and principal.token is None and getattr(response, "data", None) is not None:
            masker = console_redactor(tenant=principal.tenant)
            if masker:
                response.data = mask_json(response.data, masker, keep=IDENTIFIER_KEYS)
        return response

    @property
    def principal(self) -> Principal:
        return principal_of(self.request)

    @property
    def tenant(self) -> Tenant:
        return self.principal.tenant

    @property
    def actor(self) -> Actor:
        return self.principal.actor

    @property
    def request_id(self) -> str:
        return self.request.headers.get("X-Request-Id", "")[:64]

    def valid(self, serializer_class: type[Serializer], data=None) -> dict:
        """The request body (or `data`) validated by `serializer_class`; raises a 400 with its field errors."""
        serializer = serializer_class(data=self.request.data if data is None else data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def query(self, serializer_class: type[Serializer]) -> dict:
        """The query string validated by `serializer_class` (absent parameters are left out)."""
        return self.valid(serializer_class, self.request.query_params.dict())


class ApiListView(ApiView, generics.ListAPIView):
    """A paginated list within the caller's tenant, filtered by the query parameters `filters_class` allows."""

    required_scopes = {"GET": "read"}
    filters_class: type[Serializer] | None = None

    def get_queryset(self):
        filters = self.query(self.filters_class) if self.filters_class else {}
        return self.list_for(self.tenant, filters)

    def list_for(self, tenant: Tenant, filters: dict):
        raise NotImplementedError


class UnknownPath(APIView):
    """Unknown paths under /api/v1/ answer 404 in the API's error shape (not Django's HTML page)."""

    authentication_classes: list = []
    permission_classes: list = []
    throttle_classes: list = []
    schema = None  # not part of the documented API

    def initial(self, request, *args, **kwargs):
        raise NotFound("No such endpoint.")
