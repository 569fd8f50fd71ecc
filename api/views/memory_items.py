"""Memory items of the caller's tenant: pages, segments (with heat history), knowledge entries, profile versions.

Each can be listed, read, changed with PATCH (edit, pin, lock: whatever the item supports) and forgotten. Every
change goes through memory.services.governance with a required reason, and is audited with the caller as actor.
"""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers as drf
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from api import selectors, serializers
from api.serializers import ExternalIdField
from api.views.base import ApiListView, ApiView
from memory.models.tiers import KnowledgeKind, Tier
from memory.services import governance

MAX_ID = 2**63 - 1


def _id_field(**kwargs) -> drf.IntegerField:
    return drf.IntegerField(min_value=1, max_value=MAX_ID, required=False, **kwargs)


class OwnerFilter(drf.Serializer):
    user = ExternalIdField(required=False, help_text="The end user's external id.")
    assistant = ExternalIdField(required=False, help_text="The assistant's external id.")


class PageFilter(OwnerFilter):
    tier = drf.ChoiceField(choices=Tier.choices, required=False)
    segment = _id_field(help_text="Only pages of this segment.")
    pinned = drf.BooleanField(required=False)


class SegmentFilter(OwnerFilter):
    pinned = drf.BooleanField(required=False)
    locked = drf.BooleanField(required=False)


class KnowledgeFilter(SegmentFilter):
    kind = drf.ChoiceField(choices=KnowledgeKind.choices, required=False)


class ProfileFilter(drf.Serializer):
    user = ExternalIdField(required=False)


def _flags(item, data: dict, flags: tuple[str, ...], view: ApiView) -> None:
    for flag in flags:
        if flag in data:
            governance.memory_flag_set(
                item=item,
                flag=flag,
                value=data[flag],
                actor=view.actor,
                reason=data["reason"],
                request_id=view.request_id,
            )


def _forgotten(report: governance.ForgetReport) -> Response:
    return Response({"forgotten": report.as_detail()})


# --- Pages ------------------------------------------------------------------------------------------------------


class PagesView(ApiListView):
    """Pages (turns), newest first."""

    serializer_class = serializers.PageOut
    filters_class = PageFilter

    def list_for(self, tenant, filters):
        return selectors.page_list(tenant, filters=filters)


class PageView(ApiView):
    """One page. PATCH pins or unpins it (pages themselves are not edited: they are what was said)."""

    required_scopes = {"GET": "read", "PATCH": "write"}
    serializer_class = serializers.PageOut

    @extend_schema(operation_id="pages_read")
    def get(self, request, pk: int):
        return Response(serializers.PageOut(selectors.page_of(self.tenant, pk)).data)

    @extend_schema(operation_id="pages_update", request=serializers.PagePatch, responses={200: serializers.PageOut})
    def patch(self, request, pk: int):
        page = selectors.page_of(self.tenant, pk)
        data = self.valid(serializers.PagePatch)
        _flags(page, data, ("pinned",), self)
        return Response(serializers.PageOut(page).data)


class PageForgetView(ApiView):
    required_scopes = {"POST": "write"}
    serializer_class = serializers.ForgetIn

    @extend_schema(operation_id="pages_forget", request=serializers.ForgetIn, responses={200: serializers.ForgetOut})
    def post(self, request, pk: int):
        page = selectors.page_of(self.tenant, pk)
        data = self.valid(serializers.ForgetIn)
        report = governance.page_forget(page=page, actor=self.actor, reason=data["reason"], request_id=self.request_id)
        return _forgotten(report)


# --- Segments ---------------------------------------------------------------------------------------------------


class SegmentsView(ApiListView):
    """Mid-term topic segments with their heat now, most recently changed first."""

    serializer_class = serializers.SegmentOut
    filters_class = SegmentFilter

    def list_for(self, tenant, filters):
        return selectors.segment_list(tenant, filters=filters)


class SegmentView(ApiView):
    """One segment. PATCH edits its summary (and keywords), pins or locks it."""

    required_scopes = {"GET": "read", "PATCH": "write"}
    serializer_class = serializers.SegmentOut

    @extend_schema(operation_id="segments_read")
    def get(self, request, pk: int):
        return Response(serializers.SegmentOut(selectors.segment_of(self.tenant, pk)).data)

    @extend_schema(
        operation_id="segments_update", request=serializers.SegmentPatch, responses={200: serializers.SegmentOut}
    )
    def patch(self, request, pk: int):
        segment = selectors.segment_of(self.tenant, pk)
        data = self.valid(serializers.SegmentPatch)
        with transaction.atomic():
            if "summary" in data:
                governance.segment_edit(
                    segment=segment,
                    summary=data["summary"],
                    keywords=data.get("keywords"),
                    actor=self.actor,
                    reason=data["reason"],
                    request_id=self.request_id,
                )
            _flags(segment, data, ("pinned", "locked"), self)
        return Response(serializers.SegmentOut(selectors.segment_of(self.tenant, pk)).data)


class SegmentForgetView(ApiView):
    required_scopes = {"POST": "write"}
    serializer_class = serializers.ForgetIn

    @extend_schema(operation_id="segments_forget", request=serializers.ForgetIn, responses={200: serializers.ForgetOut})
    def post(self, request, pk: int):
        segment = selectors.segment_of(self.tenant, pk)
        data = self.valid(serializers.ForgetIn)
        report = governance.segment_forget(
            segment=segment, actor=self.actor, reason=data["reason"], request_id=self.request_id
        )
        return _forgotten(report)


class SegmentHeatView(ApiListView):
    """A segment's heat history, oldest first: what changed its heat, and its components at that moment."""

    serializer_class = serializers.HeatSampleOut

    def list_for(self, tenant, filters):
        return selectors.heat_history(selectors.segment_of(tenant, self.kwargs["pk"]))


# --- Knowledge --------------------------------------------------------------------------------------------------


class KnowledgeListView(ApiListView):
    """Knowledge entries (facts about the user and about what the assistant did), newest first."""

    serializer_class = serializers.KnowledgeOut
    filters_class = KnowledgeFilter

    def list_for(self, tenant, filters):
        return selectors.knowledge_list(tenant, filters=filters)


class KnowledgeView(ApiView):
    """One knowledge entry. PATCH corrects its text, pins or locks it."""

    required_scopes = {"GET": "read", "PATCH": "write"}
    serializer_class = serializers.KnowledgeOut

    @extend_schema(operation_id="knowledge_read")
    def get(self, request, pk: int):
        return Response(serializers.KnowledgeOut(selectors.knowledge_of(self.tenant, pk)).data)

    @extend_schema(
        operation_id="knowledge_update", request=serializers.KnowledgePatch, responses={200: serializers.KnowledgeOut}
    )
    def patch(self, request, pk: int):
        entry = selectors.knowledge_of(self.tenant, pk)
        data = self.valid(serializers.KnowledgePatch)
        with transaction.atomic():
            if "text" in data:
                governance.knowledge_edit(
                    entry=entry, text=data["text"], actor=self.actor, reason=data["reason"], request_id=self.request_id
                )
            _flags(entry, data, ("pinned", "locked"), self)
        return Response(serializers.KnowledgeOut(selectors.knowledge_of(self.tenant, pk)).data)


class KnowledgeForgetView(ApiView):
    required_scopes = {"POST": "write"}
    serializer_class = serializers.ForgetIn

    @extend_schema(
        operation_id="knowledge_forget", request=serializers.ForgetIn, responses={200: serializers.ForgetOut}
    )
    def post(self, request, pk: int):
        entry = selectors.knowledge_of(self.tenant, pk)
        data = self.valid(serializers.ForgetIn)
        report = governance.knowledge_forget(
            entry=entry, actor=self.actor, reason=data["reason"], request_id=self.request_id
        )
        return _forgotten(report)


# --- Profile ----------------------------------------------------------------------------------------------------


class ProfileVersionsView(ApiListView):
    """Profile versions, newest first per user (the newest is the current profile)."""

    serializer_class = serializers.ProfileVersionOut
    filters_class = ProfileFilter

    def list_for(self, tenant, filters):
        return selectors.profile_version_list(tenant, filters=filters)


class ProfileVersionView(ApiView):
    """One profile version. PATCH locks or unlocks it (automatic updating then leaves it alone)."""

    required_scopes = {"GET": "read", "PATCH": "write"}
    serializer_class = serializers.ProfileVersionOut

    @extend_schema(operation_id="profile_versions_read")
    def get(self, request, pk: int):
        return Response(serializers.ProfileVersionOut(selectors.profile_version_of(self.tenant, pk)).data)

    @extend_schema(
        operation_id="profile_versions_update",
        request=serializers.ProfileVersionPatch,
        responses={200: serializers.ProfileVersionOut},
    )
    def patch(self, request, pk: int):
        version = selectors.profile_version_of(self.tenant, pk)
        data = self.valid(serializers.ProfileVersionPatch)
        _flags(version, data, ("locked",), self)
        return Response(serializers.ProfileVersionOut(version).data)


class ProfileVersionForgetView(ApiView):
    required_scopes = {"POST": "write"}
    serializer_class = serializers.ForgetIn

    @extend_schema(
        operation_id="profile_versions_forget", request=serializers.ForgetIn, responses={200: serializers.ForgetOut}
    )
    def post(self, request, pk: int):
        version = selectors.profile_version_of(self.tenant, pk)
        data = self.valid(serializers.ForgetIn)
        report = governance.profile_version_forget(
            version=version, actor=self.actor, reason=data["reason"], request_id=self.request_id
        )
        return _forgotten(report)


class UserProfileView(ApiView):
    """A user's current profile; POST writes a new version by hand (earlier versions stay)."""

    required_scopes = {"GET": "read", "POST": "write"}
    serializer_class = serializers.ProfileVersionOut

    @extend_schema(operation_id="users_profile_read")
    def get(self, request, external_id: str):
        end_user = selectors.end_user_of(self.tenant, external_id)
        current = selectors.profile_current(end_user)
        if current is None:
            raise NotFound("This user has no profile yet.")
        return Response(serializers.ProfileVersionOut(current).data)

    @extend_schema(
        operation_id="users_profile_write",
        request=serializers.ProfileIn,
        responses={201: serializers.ProfileVersionOut},
    )
    def post(self, request, external_id: str):
        end_user = selectors.end_user_of(self.tenant, external_id)
        data = self.valid(serializers.ProfileIn)
        version = governance.profile_edit(
            end_user=end_user, text=data["text"], actor=self.actor, reason=data["reason"], request_id=self.request_id
        )
        return Response(serializers.ProfileVersionOut(version).data, status=status.HTTP_201_CREATED)
