"""The review queue (scope `govern`): facts and profile versions awaiting review, with the turns each was learnt from,
and a reviewer's decision on one: approve, edit and approve, or reject with a reason.

The same selectors and review services as the console's queue (memory.selectors.review, and each kind's review
service in memory.items); every decision is audited with the token as actor.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers as drf
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from api import serializers
from api.serializers import ExternalIdField
from api.views.base import ApiListView, ApiView, get_or_not_found
from memory.items import ITEM_KINDS, ItemKind
from memory.selectors.review import pending_knowledge_list, pending_profile_version_list


class ReviewFilter(drf.Serializer):
    user = ExternalIdField(required=False, source="user_external_id", help_text="Only this end user's items.")


@extend_schema_view(get=extend_schema(operation_id="review_knowledge_list"))
class PendingKnowledgeView(ApiListView):
    """Facts awaiting review, oldest first, each with the turns it was learnt from."""

    required_scopes = {"GET": "govern"}
    serializer_class = serializers.PendingKnowledgeOut
    filters_class = ReviewFilter

    def list_for(self, tenant, filters):
        return pending_knowledge_list(tenant=tenant, **filters)


@extend_schema_view(get=extend_schema(operation_id="review_profile_versions_list"))
class PendingProfileVersionsView(ApiListView):
    """Profile versions awaiting review, oldest first, each with the turns it was learnt from."""

    required_scopes = {"GET": "govern"}
    serializer_class = serializers.PendingProfileVersionOut
    filters_class = ReviewFilter

    def list_for(self, tenant, filters):
        return pending_profile_version_list(tenant=tenant, **filters)


class ReviewDecisionView(ApiView):
    # Decides on one item of `kind` awaiting review through its review service; answers the item as it now is.
    # Not a docstring: drf-spectacular would show it as both decision routes' description.

    required_scopes = {"POST": "govern"}
    serializer_class = serializers.ReviewIn
    kind: ItemKind
    out_class: type[Serializer]

    def post(self, request, pk: int):
        item = get_or_not_found(self.kind.get, tenant=self.tenant, id=pk)
        data = self.valid(serializers.ReviewIn)
        self.kind.item_review(item, **data, actor=self.actor, request_id=self.request_id)
        return Response(self.out_class(self.kind.get(tenant=self.tenant, id=pk)).data)


def _decision_schema(operation_id: str, out: type[Serializer], what: str):
    description = (
        f"Approve the {what} (with `text`: edit it, then approve), or reject it. Rejecting or editing needs a "
        f"`reason`; a {what} that is not awaiting review is refused (400). Audited with the token as actor."
    )
    return extend_schema_view(
        post=extend_schema(
            operation_id=operation_id, request=serializers.ReviewIn, responses={200: out}, description=description
        )
    )


@_decision_schema("review_knowledge_decide", serializers.KnowledgeOut, "fact")
class KnowledgeDecisionView(ReviewDecisionView):
    kind = ITEM_KINDS["knowledge"]
    out_class = serializers.KnowledgeOut


@_decision_schema("review_profile_versions_decide", serializers.ProfileVersionOut, "profile version")
class ProfileVersionDecisionView(ReviewDecisionView):
    kind = ITEM_KINDS["profile_version"]
    out_class = serializers.ProfileVersionOut
