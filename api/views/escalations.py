"""Escalations: any caller who reads memory (the read scope, an agent's role) flags a fact or a page for a supervisor;
callers with the write scope list the open ones, oldest first, and resolve or dismiss each. Every step is audited
(memory.services.validity)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers as drf
from rest_framework import status
from rest_framework.response import Response

from api import serializers
from api.views.base import ApiListView, ApiView, get_or_not_found
from memory.items import ITEM_KINDS
from memory.models import EscalationState
from memory.selectors.escalations import escalation_get, escalation_list
from memory.services.validity import escalation_open, escalation_resolve


class EscalationFilter(drf.Serializer):
    state = drf.ChoiceField(choices=EscalationState.choices, required=False, default=EscalationState.OPEN)


class EscalationsView(ApiListView):
    """GET: the tenant's escalations in `state` (open by default), oldest first. POST: flag an item for a supervisor."""

    required_scopes = {"GET": "write", "POST": "read"}
    serializer_class = serializers.EscalationOut
    filters_class = EscalationFilter

    def list_for(self, tenant, filters):
        return escalation_list(tenant=tenant, **filters)

    @extend_schema(
        operation_id="escalations_open", request=serializers.EscalationIn, responses={201: serializers.EscalationOut}
    )
    def post(self, request):
        data = self.valid(serializers.EscalationIn)
        item = get_or_not_found(ITEM_KINDS[data["kind"]].get, tenant=self.tenant, id=data["id"])
        escalation = escalation_open(
            tenant=self.tenant, item=item, actor=self.actor, note=data["note"], request_id=self.request_id
        )
        return Response(serializers.EscalationOut(escalation).data, status=status.HTTP_201_CREATED)


class EscalationResolveView(ApiView):
    """Resolve (or, with `dismiss`, dismiss) one open escalation with a note; settling one twice is refused (400)."""

    required_scopes = {"POST": "write"}
    serializer_class = serializers.EscalationOut

    @extend_schema(
        operation_id="escalations_resolve",
        request=serializers.EscalationSettleIn,
        responses={200: serializers.EscalationOut},
    )
    def post(self, request, pk: int):
        escalation = get_or_not_found(escalation_get, tenant=self.tenant, id=pk)
        data = self.valid(serializers.EscalationSettleIn)
        escalation = escalation_resolve(escalation=escalation, actor=self.actor, request_id=self.request_id, **data)
        return Response(serializers.EscalationOut(escalation).data)
