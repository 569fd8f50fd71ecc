"""End users and assistants of the caller's tenant, addressed by their external ids: create, list, read, deactivate."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers as drf
from rest_framework import status
from rest_framework.response import Response

from api import serializers
from api.views.base import ApiListView, ApiView, get_or_not_found
from memory.selectors.people import assistant_get, assistant_list, end_user_get, end_user_list
from memory.services.governance import memory_pause_set
from memory.services.tenancy import assistant_create, assistant_set_active, end_user_create, end_user_set_active
from memory.services.turns import space_get_or_create


class ActiveFilter(drf.Serializer):
    active = drf.BooleanField(required=False, help_text="Only active (true) or deactivated (false) ones.")


class EndUsersView(ApiListView):
    """List the tenant's end users, or create one (an existing external id answers 200 with the user unchanged)."""

    required_scopes = {"GET": "read", "POST": "write"}
    serializer_class = serializers.EndUserOut
    filters_class = ActiveFilter

    def list_for(self, tenant, filters):
        return end_user_list(tenant=tenant, active=filters.get("active"))

    @extend_schema(
        operation_id="users_create",
        request=serializers.EndUserIn,
        responses={201: serializers.EndUserOut, 200: serializers.EndUserOut},
    )
    def post(self, request):
        data = self.valid(serializers.EndUserIn)
        existed = end_user_list(tenant=self.tenant, external_id=data["external_id"]).exists()
        end_user = end_user_create(tenant=self.tenant, **data)
        code = status.HTTP_200_OK if existed else status.HTTP_201_CREATED
        return Response(serializers.EndUserOut(end_user).data, status=code)


class EndUserView(ApiView):
    required_scopes = {"GET": "read"}
    serializer_class = serializers.EndUserOut

    @extend_schema(operation_id="users_read")
    def get(self, request, external_id: str):
        return Response(
            serializers.EndUserOut(get_or_not_found(end_user_get, tenant=self.tenant, external_id=external_id)).data
        )


class EndUserActivationView(ApiView):
    """Deactivate (`active` false) or reactivate an end user; their memory is kept either way."""

    required_scopes = {"POST": "write"}
    serializer_class = serializers.ActivationIn
    active = False

    @extend_schema(request=serializers.ActivationIn, responses={200: serializers.EndUserOut})
    def post(self, request, external_id: str):
        end_user = get_or_not_found(end_user_get, tenant=self.tenant, external_id=external_id)
        data = self.valid(serializers.ActivationIn)
        end_user_set_active(end_user=end_user, active=self.active, actor=self.actor, reason=data.get("reason", ""))
        return Response(serializers.EndUserOut(end_user).data)


class MemoryPauseView(ApiView):
    """Pause (turns are still answered, nothing is kept beyond short-term memory) or resume a user's memory."""

    required_scopes = {"POST": "write"}
    serializer_class = serializers.PauseIn

    @extend_schema(
        operation_id="users_memory_pause", request=serializers.PauseIn, responses={200: serializers.PauseOut}
    )
    def post(self, request, external_id: str):
        end_user = get_or_not_found(end_user_get, tenant=self.tenant, external_id=external_id)
        data = self.valid(serializers.PauseIn)
        assistant = get_or_not_found(assistant_get, tenant=self.tenant, external_id=data["assistant"])
        space = space_get_or_create(end_user=end_user, assistant=assistant)
        changed = memory_pause_set(
            space=space, paused=data["paused"], actor=self.actor, reason=data["reason"], request_id=self.request_id
        )
        return Response({"assistant": assistant.external_id, "paused": space.paused, "changed": changed})


class AssistantsView(ApiListView):
    """List the tenant's assistants, or create one (an existing external id answers 200, its persona updated)."""

    required_scopes = {"GET": "read", "POST": "write"}
    serializer_class = serializers.AssistantOut
    filters_class = ActiveFilter

    def list_for(self, tenant, filters):
        return assistant_list(tenant=tenant, active=filters.get("active"))

    @extend_schema(
        operation_id="assistants_create",
        request=serializers.AssistantIn,
        responses={201: serializers.AssistantOut, 200: serializers.AssistantOut},
    )
    def post(self, request):
        data = self.valid(serializers.AssistantIn)
        existed = assistant_list(tenant=self.tenant, external_id=data["external_id"]).exists()
        assistant = assistant_create(
            tenant=self.tenant, external_id=data["external_id"], name=data["name"], persona=data.get("persona") or None
        )
        code = status.HTTP_200_OK if existed else status.HTTP_201_CREATED
        return Response(serializers.AssistantOut(assistant).data, status=code)


class AssistantView(ApiView):
    required_scopes = {"GET": "read"}
    serializer_class = serializers.AssistantOut

    @extend_schema(operation_id="assistants_read")
    def get(self, request, external_id: str):
        return Response(
            serializers.AssistantOut(get_or_not_found(assistant_get, tenant=self.tenant, external_id=external_id)).data
        )


class AssistantActivationView(ApiView):
    """Deactivate (`active` false) or reactivate an assistant; memory with it is kept either way."""

    required_scopes = {"POST": "write"}
    serializer_class = serializers.ActivationIn
    active = False

    @extend_schema(request=serializers.ActivationIn, responses={200: serializers.AssistantOut})
    def post(self, request, external_id: str):
        assistant = get_or_not_found(assistant_get, tenant=self.tenant, external_id=external_id)
        data = self.valid(serializers.ActivationIn)
        assistant_set_active(assistant=assistant, active=self.active, actor=self.actor, reason=data.get("reason", ""))
        return Response(serializers.AssistantOut(assistant).data)
