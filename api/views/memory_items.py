"""Memory items of the caller's tenant: pages, segments (with heat history), knowledge entries, profile versions.

Each can be listed, read, changed with PATCH (edit, pin, lock: whatever its kind supports, as memory.items says),
marked outdated or current (facts and pages) and forgotten.
Every change goes through the kind's update or forget service with a required reason, and is audited with
the caller as actor. Every read is audited too (`memory.read`, as the MCP tools and the console audit theirs): one
entry per user whose memory a list's page of results shows, one for an item read.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers as drf
from rest_framework import status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from api import serializers
from api.serializers import ExternalIdField
from api.views.base import ApiListView, ApiView, get_or_not_found
from memory.items import ITEM_KINDS, ItemKind
from memory.models.tiers import KnowledgeKind, Tier
from memory.selectors.items import (
    heat_sample_list,
    knowledge_list,
    page_list,
    profile_version_list,
    segment_get,
    segment_list,
)
from memory.selectors.people import end_user_get
from memory.services.governance import memory_read_record, memory_reads_record, profile_edit

MAX_ID = 2**63 - 1
DRY_RUN = OpenApiParameter(
    "dry_run", bool, required=False, description="1 or true: only answer what forgetting would do (as the body's)."
)


def _id_field(**kwargs) -> drf.IntegerField:
    return drf.IntegerField(min_value=1, max_value=MAX_ID, required=False, **kwargs)


# Each filter's `source` is the keyword of the list selector it feeds (the query parameter keeps its public name).
class OwnerFilter(drf.Serializer):
    user = ExternalIdField(required=False, source="user_external_id", help_text="The end user's external id.")
    assistant = ExternalIdField(
        required=False, source="assistant_external_id", help_text="The assistant's external id."
    )


class PageFilter(OwnerFilter):
    tier = drf.ChoiceField(choices=Tier.choices, required=False)
    segment = _id_field(source="segment_id", help_text="Only pages of this segment.")
    pinned = drf.BooleanField(required=False)


class SegmentFilter(OwnerFilter):
    pinned = drf.BooleanField(required=False)
    locked = drf.BooleanField(required=False)


class KnowledgeFilter(SegmentFilter):
    kind = drf.ChoiceField(choices=KnowledgeKind.choices, required=False)


class ProfileFilter(drf.Serializer):
    user = ExternalIdField(required=False, source="user_external_id")


class ItemView(ApiView):
    """One item of `kind`: GET reads it; PATCH sends the validated body to the kind's update service, once."""

    required_scopes = {"GET": "read", "PATCH": "write"}
    kind: ItemKind
    patch_class: type[Serializer]

    def item(self, pk: int):
        return get_or_not_found(self.kind.get, tenant=self.tenant, id=pk)

    def get(self, request, pk: int):
        item = self.item(pk)
        memory_read_record(
            actor=self.actor, end_user=item.end_user, what=f"api {self.kind.name}", target_type=self.kind.name,
            target_id=item.pk, request_id=self.request_id,
        )  # fmt: skip
        return Response(self.serializer_class(item).data)

    def patch(self, request, pk: int):
        item = self.item(pk)
        data = self.valid(self.patch_class)
        self.kind.item_update(item, **data, actor=self.actor, request_id=self.request_id)
        return Response(self.serializer_class(self.item(pk)).data)


class ItemForgetView(ApiView):
    # Forgets one item of `kind` through its forget service; answers what was removed, counted by kind.
    # Not a docstring: drf-spectacular would show it as every forget route's description.

    required_scopes = {"POST": "write"}
    serializer_class = serializers.ForgetIn
    kind: ItemKind

    def post(self, request, pk: int):
        item = get_or_not_found(self.kind.get, tenant=self.tenant, id=pk)
        data = self.valid(serializers.ForgetIn, self._body())
        if data["dry_run"]:
            impact = self.kind.item_impact(item)
            return Response({"dry_run": True, "impact": impact.as_detail(), "summary": impact.describe(self.kind.name)})
        report = self.kind.item_forget(item, actor=self.actor, reason=data["reason"], request_id=self.request_id)
        return Response({"forgotten": report.as_detail()})

    def _body(self) -> dict:
        """The body, with `?dry_run=1` in the query string standing for `"dry_run": true`."""
        body = self.request.data.copy() if hasattr(self.request.data, "copy") else self.request.data
        if "dry_run" in self.request.query_params and hasattr(body, "setdefault"):
            body.setdefault("dry_run", self.request.query_params["dry_run"])
        return body


class ItemMarkView(ApiView):
    # Marks one item of `kind` outdated (kept as history, with a replacing value) or current again, through the kind's
    # validity service; answers the item as it now is. Marking it as it already is changes nothing and is not audited.
    # Not a docstring: drf-spectacular would show it as every such route's description.

    required_scopes = {"POST": "write"}
    kind: ItemKind
    action: str  # "outdated" or "current"

    def post(self, request, pk: int):
        item = get_or_not_found(self.kind.get, tenant=self.tenant, id=pk)
        data = self.valid(serializers.OutdatedIn if self.action == "outdated" else serializers.CurrentIn)
        self.kind.item_mark(item, self.action, **data, actor=self.actor, request_id=self.request_id)
        return Response(self.serializer_class(get_or_not_found(self.kind.get, tenant=self.tenant, id=pk)).data)


def _mark_schema(operation_id: str, action: str, out: type[Serializer]):
    body = serializers.OutdatedIn if action == "outdated" else serializers.CurrentIn
    return extend_schema_view(post=extend_schema(operation_id=operation_id, request=body, responses={200: out}))


def _forget_schema(operation_id: str):
    return extend_schema_view(
        post=extend_schema(
            operation_id=operation_id,
            request=serializers.ForgetIn,
            responses={200: serializers.ForgetOut},
            parameters=[DRY_RUN],
        )
    )


def _item_schema(prefix: str, out: type[Serializer], patch: type[Serializer]):
    return extend_schema_view(
        get=extend_schema(operation_id=f"{prefix}_read"),
        patch=extend_schema(operation_id=f"{prefix}_update", request=patch, responses={200: out}),
    )


class MemoryListView(ApiListView):
    """A list of memory items whose read is audited once per user the page of results shows."""

    what: str  # in the audit entry: "api pages"

    def paginate_queryset(self, queryset):
        shown = super().paginate_queryset(queryset)
        owners = [item.end_user.pk for item in (shown if shown is not None else queryset)]
        memory_reads_record(
            actor=self.actor, tenant_id=self.tenant.pk, end_user_ids=owners, what=self.what,
            request_id=self.request_id,
        )  # fmt: skip
        return shown


# --- Pages ------------------------------------------------------------------------------------------------------


class PagesView(MemoryListView):
    """Pages (turns), newest first."""

    what = "api pages"
    serializer_class = serializers.PageOut
    filters_class = PageFilter

    def list_for(self, tenant, filters):
        return page_list(tenant=tenant, **filters)


@_item_schema("pages", serializers.PageOut, serializers.PagePatch)
class PageView(ItemView):
    """One page. PATCH pins or unpins it (pages themselves are not edited: they are what was said)."""

    kind = ITEM_KINDS["page"]
    serializer_class = serializers.PageOut
    patch_class = serializers.PagePatch


@_forget_schema("pages_forget")
class PageForgetView(ItemForgetView):
    kind = ITEM_KINDS["page"]


@_mark_schema("pages_outdated", "outdated", serializers.PageOut)
class PageOutdatedView(ItemMarkView):
    kind, action, serializer_class = ITEM_KINDS["page"], "outdated", serializers.PageOut


@_mark_schema("pages_current", "current", serializers.PageOut)
class PageCurrentView(ItemMarkView):
    kind, action, serializer_class = ITEM_KINDS["page"], "current", serializers.PageOut


# --- Segments ---------------------------------------------------------------------------------------------------


class SegmentsView(MemoryListView):
    """Mid-term topic segments with their heat now, most recently changed first."""

    what = "api segments"
    serializer_class = serializers.SegmentOut
    filters_class = SegmentFilter

    def list_for(self, tenant, filters):
        return segment_list(tenant=tenant, **filters)


@_item_schema("segments", serializers.SegmentOut, serializers.SegmentPatch)
class SegmentView(ItemView):
    """One segment. PATCH edits its summary (and keywords), pins or locks it."""

    kind = ITEM_KINDS["segment"]
    serializer_class = serializers.SegmentOut
    patch_class = serializers.SegmentPatch


@_forget_schema("segments_forget")
class SegmentForgetView(ItemForgetView):
    kind = ITEM_KINDS["segment"]


class SegmentHeatView(ApiListView):
    """A segment's heat history, oldest first: what changed its heat, and its components at that moment."""

    serializer_class = serializers.HeatSampleOut

    def list_for(self, tenant, filters):
        segment = get_or_not_found(segment_get, tenant=tenant, id=self.kwargs["pk"])
        memory_read_record(
            actor=self.actor, end_user=segment.end_user, what="api segment heat", target_type="segment",
            target_id=segment.pk, request_id=self.request_id,
        )  # fmt: skip
        return heat_sample_list(segment=segment)


# --- Knowledge --------------------------------------------------------------------------------------------------


class KnowledgeListView(MemoryListView):
    """Knowledge entries (facts about the user and about what the assistant did), newest first."""

    what = "api knowledge"
    serializer_class = serializers.KnowledgeOut
    filters_class = KnowledgeFilter

    def list_for(self, tenant, filters):
        return knowledge_list(tenant=tenant, **filters)


@_item_schema("knowledge", serializers.KnowledgeOut, serializers.KnowledgePatch)
class KnowledgeView(ItemView):
    """One knowledge entry. PATCH corrects its text, pins or locks it."""

    kind = ITEM_KINDS["knowledge"]
    serializer_class = serializers.KnowledgeOut
    patch_class = serializers.KnowledgePatch


@_forget_schema("knowledge_forget")
class KnowledgeForgetView(ItemForgetView):
    kind = ITEM_KINDS["knowledge"]


@_mark_schema("knowledge_outdated", "outdated", serializers.KnowledgeOut)
class KnowledgeOutdatedView(ItemMarkView):
    kind, action, serializer_class = ITEM_KINDS["knowledge"], "outdated", serializers.KnowledgeOut


@_mark_schema("knowledge_current", "current", serializers.KnowledgeOut)
class KnowledgeCurrentView(ItemMarkView):
    kind, action, serializer_class = ITEM_KINDS["knowledge"], "current", serializers.KnowledgeOut


# --- Profile ----------------------------------------------------------------------------------------------------


class ProfileVersionsView(MemoryListView):
    """Profile versions, newest first per user (the newest is the current profile)."""

    what = "api profile versions"
    serializer_class = serializers.ProfileVersionOut
    filters_class = ProfileFilter

    def list_for(self, tenant, filters):
        return profile_version_list(tenant=tenant, **filters)


@_item_schema("profile_versions", serializers.ProfileVersionOut, serializers.ProfileVersionPatch)
class ProfileVersionView(ItemView):
    """One profile version. PATCH locks or unlocks it (automatic updating then leaves it alone)."""

    kind = ITEM_KINDS["profile_version"]
    serializer_class = serializers.ProfileVersionOut
    patch_class = serializers.ProfileVersionPatch


@_forget_schema("profile_versions_forget")
class ProfileVersionForgetView(ItemForgetView):
    kind = ITEM_KINDS["profile_version"]


class UserProfileView(ApiView):
    """A user's current profile; POST writes a new version by hand (earlier versions stay)."""

    required_scopes = {"GET": "read", "POST": "write"}
    serializer_class = serializers.ProfileVersionOut

    @extend_schema(operation_id="users_profile_read")
    def get(self, request, external_id: str):
        end_user = get_or_not_found(end_user_get, tenant=self.tenant, external_id=external_id)
        current = profile_version_list(tenant=self.tenant, end_user=end_user).first()
        memory_read_record(actor=self.actor, end_user=end_user, what="api profile", request_id=self.request_id)
        if current is None:
            raise NotFound("This user has no profile yet.")
        return Response(serializers.ProfileVersionOut(current).data)

    @extend_schema(
        operation_id="users_profile_write",
        request=serializers.ProfileIn,
        responses={201: serializers.ProfileVersionOut},
    )
    def post(self, request, external_id: str):
        end_user = get_or_not_found(end_user_get, tenant=self.tenant, external_id=external_id)
        data = self.valid(serializers.ProfileIn)
        version = profile_edit(
            end_user=end_user, text=data["text"], actor=self.actor, reason=data["reason"], request_id=self.request_id
        )
        return Response(serializers.ProfileVersionOut(version).data, status=status.HTTP_201_CREATED)
