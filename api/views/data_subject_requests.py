"""Data-subject requests (scope `govern`): log one as it arrived, list them by deadline, read one, and answer it
(extend, fulfil, refuse, withdraw). Every step is audited (memory.services.data_subject_requests)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from api import serializers
from api.views.base import ApiListView, ApiView, get_or_not_found
from memory.selectors.data_subject_requests import data_subject_request_get, data_subject_request_list
from memory.services.data_subject_requests import (
    DataSubjectRequestError,
    data_subject_request_extend,
    data_subject_request_fulfil,
    data_subject_request_open,
    data_subject_request_refuse,
    data_subject_request_withdraw,
)


def _refused(exc: DataSubjectRequestError) -> ValidationError:
    return ValidationError({"non_field_errors": [str(exc)]})


class DataSubjectRequestsView(ApiListView):
    """GET: the tenant's requests, the nearest deadline first. POST: log a request as it arrived (due one month on)."""

    required_scopes = {"GET": "govern", "POST": "govern"}
    serializer_class = serializers.DataSubjectRequestOut
    filters_class = serializers.DataSubjectRequestFilter

    def list_for(self, tenant, filters):
        return data_subject_request_list(tenant=tenant, **filters)

    @extend_schema(
        operation_id="data_subject_requests_open",
        request=serializers.DataSubjectRequestIn,
        responses={201: serializers.DataSubjectRequestOut},
    )
    def post(self, request):
        data = self.valid(serializers.DataSubjectRequestIn)
        data["received_at"] = data.get("received_at") or timezone.now()
        try:
            opened = data_subject_request_open(
                tenant=self.tenant, external_id=data.pop("user"), actor=self.actor, request_id=self.request_id, **data
            )
        except DataSubjectRequestError as exc:
            raise _refused(exc) from None
        return Response(serializers.DataSubjectRequestOut(opened).data, status=status.HTTP_201_CREATED)


class DataSubjectRequestView(ApiView):
    """One request, with its deadline, status and what answered it."""

    required_scopes = {"GET": "govern"}
    serializer_class = serializers.DataSubjectRequestOut

    @extend_schema(operation_id="data_subject_requests_read")
    def get(self, request, pk: int):
        found = get_or_not_found(data_subject_request_get, tenant=self.tenant, id=pk)
        return Response(serializers.DataSubjectRequestOut(found).data)


STEPS = {
    "extend": lambda case, note, legal_basis, **who: data_subject_request_extend(request=case, reason=note, **who),
    "fulfil": lambda case, note, legal_basis, **who: data_subject_request_fulfil(
        request=case, note=note, legal_basis=legal_basis, **who
    ),
    "refuse": lambda case, note, legal_basis, **who: data_subject_request_refuse(request=case, reason=note, **who),
    "withdraw": lambda case, note, legal_basis, **who: data_subject_request_withdraw(request=case, note=note, **who),
}


class DataSubjectRequestStepView(ApiView):
    """One step on a request. An erasure under legal hold answers 409 (`legal_hold`) and the request stays open;
    a request already answered, or one that cannot be answered so, answers 400."""

    required_scopes = {"POST": "govern"}
    serializer_class = serializers.DataSubjectRequestOut
    step = ""

    @extend_schema(request=serializers.DataSubjectRequestStepIn, responses={200: serializers.DataSubjectRequestOut})
    def post(self, request, pk: int):
        found = get_or_not_found(data_subject_request_get, tenant=self.tenant, id=pk)
        data = self.valid(serializers.DataSubjectRequestStepIn)
        try:
            found = STEPS[self.step](found, **data, actor=self.actor, request_id=self.request_id)
        except DataSubjectRequestError as exc:
            raise _refused(exc) from None
        return Response(serializers.DataSubjectRequestOut(found).data)
