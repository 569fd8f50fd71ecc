"""Webhooks (scope `govern`: what they send is memory leaving the installation): a tenant's endpoints, created with
a secret answered once, changed, deleted, given a new secret or a test event; each endpoint's deliveries with their
attempts, and replaying a delivery (the same event id again). Every change is audited."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers as drf
from rest_framework import status
from rest_framework.response import Response

from api.views.base import ApiListView, ApiView, get_or_not_found
from memory.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from memory.selectors.webhooks import (
    webhook_delivery_get,
    webhook_delivery_list,
    webhook_endpoint_get,
    webhook_endpoint_list,
)
from memory.services.webhook_delivery import webhook_delivery_replay
from memory.services.webhook_endpoints import (
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_endpoint_secret_rotate,
    webhook_endpoint_test,
    webhook_endpoint_update,
)
from memory.webhooks import EVENT_TYPES

# --- Serializers --------------------------------------------------------------------------------------------------


class WebhookEndpointIn(drf.Serializer):
    url = drf.CharField(max_length=500, help_text="https://… (plain http only to a private address in development).")
    event_types = drf.ListField(child=drf.ChoiceField(choices=list(EVENT_TYPES)), min_length=1, max_length=20)
    description = drf.CharField(max_length=200, required=False, allow_blank=True, default="")
    enabled = drf.BooleanField(required=False, default=True)


class WebhookEndpointPatch(drf.Serializer):
    url = drf.CharField(max_length=500, required=False)
    event_types = drf.ListField(
        child=drf.ChoiceField(choices=list(EVENT_TYPES)), min_length=1, max_length=20, required=False
    )
    description = drf.CharField(max_length=200, required=False, allow_blank=True)
    enabled = drf.BooleanField(required=False)


class WebhookEndpointOut(drf.ModelSerializer):
    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "description", "event_types", "enabled", "created_at", "secret_rotated_at"]


class WebhookEndpointSecretOut(WebhookEndpointOut):
    secret = drf.CharField(help_text="whsec_…: answered only now; verify each delivery's signature with it.")

    class Meta(WebhookEndpointOut.Meta):
        fields = [*WebhookEndpointOut.Meta.fields, "secret"]


class WebhookAttemptOut(drf.ModelSerializer):
    class Meta:
        model = WebhookAttempt
        fields = ["number", "at", "status_code", "latency_ms", "error", "replay"]


class WebhookDeliveryOut(drf.ModelSerializer):
    event_id = drf.CharField(source="event.public_id")
    event_type = drf.CharField(source="event.type")
    status = drf.ChoiceField(choices=DeliveryStatus.choices)
    attempts = WebhookAttemptOut(source="attempt_log", many=True)

    class Meta:
        model = WebhookDelivery
        fields = [
            "id", "event_id", "event_type", "status", "attempts", "last_status_code", "next_attempt_at",
            "delivered_at", "created_at",
        ]  # fmt: skip


def _with_secret(created) -> dict:
    return WebhookEndpointSecretOut(created.endpoint).data | {"secret": created.secret}


# --- Views --------------------------------------------------------------------------------------------------------


class WebhookEndpointsView(ApiListView):
    """GET: the tenant's endpoints, oldest first (never their secrets). POST: a new endpoint; the answer holds its
    secret, the only time it is given."""

    required_scopes = {"GET": "govern", "POST": "govern"}
    serializer_class = WebhookEndpointOut

    def list_for(self, tenant, filters):
        return webhook_endpoint_list(tenant=tenant)

    @extend_schema(operation_id="webhooks_create", request=WebhookEndpointIn, responses={201: WebhookEndpointSecretOut})
    def post(self, request):
        data = self.valid(WebhookEndpointIn)
        created = webhook_endpoint_create(tenant=self.tenant, actor=self.actor, request_id=self.request_id, **data)
        return Response(_with_secret(created), status=status.HTTP_201_CREATED)


class WebhookEndpointView(ApiView):
    """GET one endpoint; PATCH what is given (disabling it cancels deliveries not sent yet); DELETE it with its
    delivery log."""

    required_scopes = {"GET": "govern", "PATCH": "govern", "DELETE": "govern"}
    serializer_class = WebhookEndpointOut

    def _endpoint(self, pk: int) -> WebhookEndpoint:
        return get_or_not_found(webhook_endpoint_get, tenant=self.tenant, id=pk)

    @extend_schema(operation_id="webhooks_read")
    def get(self, request, pk: int):
        return Response(WebhookEndpointOut(self._endpoint(pk)).data)

    @extend_schema(operation_id="webhooks_update", request=WebhookEndpointPatch, responses={200: WebhookEndpointOut})
    def patch(self, request, pk: int):
        endpoint = self._endpoint(pk)
        data = self.valid(WebhookEndpointPatch)
        endpoint = webhook_endpoint_update(endpoint=endpoint, actor=self.actor, request_id=self.request_id, **data)
        return Response(WebhookEndpointOut(endpoint).data)

    @extend_schema(operation_id="webhooks_delete", responses={204: None})
    def delete(self, request, pk: int):
        webhook_endpoint_delete(endpoint=self._endpoint(pk), actor=self.actor, request_id=self.request_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookSecretView(ApiView):
    """Give the endpoint a new secret at once (the old one signs nothing from now on); the answer holds it, once."""

    required_scopes = {"POST": "govern"}
    serializer_class = WebhookEndpointSecretOut

    @extend_schema(operation_id="webhooks_secret_rotate", request=None, responses={200: WebhookEndpointSecretOut})
    def post(self, request, pk: int):
        endpoint = get_or_not_found(webhook_endpoint_get, tenant=self.tenant, id=pk)
        rotated = webhook_endpoint_secret_rotate(endpoint=endpoint, actor=self.actor, request_id=self.request_id)
        return Response(_with_secret(rotated))


class WebhookTestView(ApiView):
    """Send a `webhook.test` event to the endpoint now (queued); the answer is its delivery."""

    required_scopes = {"POST": "govern"}
    serializer_class = WebhookDeliveryOut

    @extend_schema(operation_id="webhooks_test", request=None, responses={202: WebhookDeliveryOut})
    def post(self, request, pk: int):
        endpoint = get_or_not_found(webhook_endpoint_get, tenant=self.tenant, id=pk)
        delivery = webhook_endpoint_test(endpoint=endpoint, actor=self.actor, request_id=self.request_id)
        return Response(WebhookDeliveryOut(delivery).data, status=status.HTTP_202_ACCEPTED)


class WebhookDeliveriesView(ApiListView):
    """The endpoint's deliveries, newest first, each with its event id and type and every attempt."""

    required_scopes = {"GET": "govern"}
    serializer_class = WebhookDeliveryOut

    def get_queryset(self):
        endpoint = get_or_not_found(webhook_endpoint_get, tenant=self.tenant, id=self.kwargs["pk"])
        return webhook_delivery_list(endpoint=endpoint)


class WebhookReplayView(ApiView):
    """Send a delivery's event again with the same event id, as a new attempt (queued); refused (400) for an event
    whose end user was erased or a disabled endpoint."""

    required_scopes = {"POST": "govern"}
    serializer_class = WebhookDeliveryOut

    @extend_schema(operation_id="webhook_deliveries_replay", request=None, responses={202: WebhookDeliveryOut})
    def post(self, request, pk: int):
        delivery = get_or_not_found(webhook_delivery_get, tenant=self.tenant, id=pk)
        delivery = webhook_delivery_replay(delivery=delivery, actor=self.actor, request_id=self.request_id)
        return Response(WebhookDeliveryOut(delivery).data, status=status.HTTP_202_ACCEPTED)
