"""The versioned REST API, mounted at /api/v1/ (memoryos_site/urls.py)."""

from __future__ import annotations

from django.urls import path, re_path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from api.views import (
    conversation,
    data_subject_requests,
    escalations,
    governance,
    memory_items,
    people,
    review,
    webhooks,
)
from api.views.base import UnknownPath
from memory.services.tenancy import EXTERNAL_ID


class ExternalIdConverter:
    regex = EXTERNAL_ID.pattern.strip("^$")

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class ItemIdConverter:
    """A database id: digits that fit a bigint (longer ones are not found rather than a database error)."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(ExternalIdConverter, "external_id")
register_converter(ItemIdConverter, "item_id")

app_name = "api"

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # The split view serves its set-up script as a file, so the Content-Security-Policy needs no inline script.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
    # Conversation
    path("turns/", conversation.TurnsView.as_view(), name="turns"),
    path("retrieve/", conversation.RetrieveView.as_view(), name="retrieve"),
    path("chat/", conversation.ChatView.as_view(), name="chat"),
    # End users and assistants
    path("users/", people.EndUsersView.as_view(), name="users"),
    path("users/<external_id:external_id>/", people.EndUserView.as_view(), name="user"),
    path(
        "users/<external_id:external_id>/deactivate/",
        people.EndUserActivationView.as_view(active=False),
        name="user-deactivate",
    ),
    path(
        "users/<external_id:external_id>/activate/",
        people.EndUserActivationView.as_view(active=True),
        name="user-activate",
    ),
    path("users/<external_id:external_id>/memory-pause/", people.MemoryPauseView.as_view(), name="user-pause"),
    path("users/<external_id:external_id>/profile/", memory_items.UserProfileView.as_view(), name="user-profile"),
    path("users/<external_id:external_id>/export/", governance.UserExportView.as_view(), name="user-export"),
    path("users/<external_id:external_id>/erasure/", governance.ErasureView.as_view(), name="user-erasure"),
    path("users/<external_id:external_id>/import/", governance.UserImportView.as_view(), name="user-import"),
    path("assistants/", people.AssistantsView.as_view(), name="assistants"),
    path("assistants/<external_id:external_id>/", people.AssistantView.as_view(), name="assistant"),
    path(
        "assistants/<external_id:external_id>/deactivate/",
        people.AssistantActivationView.as_view(active=False),
        name="assistant-deactivate",
    ),
    path(
        "assistants/<external_id:external_id>/activate/",
        people.AssistantActivationView.as_view(active=True),
        name="assistant-activate",
    ),
    # Memory items
    path("pages/", memory_items.PagesView.as_view(), name="pages"),
    path("pages/<item_id:pk>/", memory_items.PageView.as_view(), name="page"),
    path("pages/<item_id:pk>/forget/", memory_items.PageForgetView.as_view(), name="page-forget"),
    path("pages/<item_id:pk>/outdated/", memory_items.PageOutdatedView.as_view(), name="page-outdated"),
    path("pages/<item_id:pk>/current/", memory_items.PageCurrentView.as_view(), name="page-current"),
    path("segments/", memory_items.SegmentsView.as_view(), name="segments"),
    path("segments/<item_id:pk>/", memory_items.SegmentView.as_view(), name="segment"),
    path("segments/<item_id:pk>/forget/", memory_items.SegmentForgetView.as_view(), name="segment-forget"),
    path("segments/<item_id:pk>/heat/", memory_items.SegmentHeatView.as_view(), name="segment-heat"),
    path("knowledge/", memory_items.KnowledgeListView.as_view(), name="knowledge"),
    path("knowledge/<item_id:pk>/", memory_items.KnowledgeView.as_view(), name="knowledge-entry"),
    path("knowledge/<item_id:pk>/forget/", memory_items.KnowledgeForgetView.as_view(), name="knowledge-forget"),
    path("knowledge/<item_id:pk>/outdated/", memory_items.KnowledgeOutdatedView.as_view(), name="knowledge-outdated"),
    path("knowledge/<item_id:pk>/current/", memory_items.KnowledgeCurrentView.as_view(), name="knowledge-current"),
    path("profile-versions/", memory_items.ProfileVersionsView.as_view(), name="profile-versions"),
    path("profile-versions/<item_id:pk>/", memory_items.ProfileVersionView.as_view(), name="profile-version"),
    path(
        "profile-versions/<item_id:pk>/forget/",
        memory_items.ProfileVersionForgetView.as_view(),
        name="profile-version-forget",
    ),
    # Governance
    path("audit/", governance.AuditView.as_view(), name="audit"),
    path("erasure-receipts/", governance.ErasureReceiptsView.as_view(), name="erasure-receipts"),
    path("erasure-receipts/<item_id:pk>/", governance.ErasureReceiptView.as_view(), name="erasure-receipt"),
    path("exports/<item_id:pk>/", governance.ExportView.as_view(), name="export"),
    path("imports/<item_id:pk>/", governance.ImportView.as_view(), name="import"),
    path("exports/<item_id:pk>/download/", governance.ExportDownloadView.as_view(), name="export-download"),
    # Data-subject requests
    path("data-subject-requests/", data_subject_requests.DataSubjectRequestsView.as_view(), name="dsrs"),
    path("data-subject-requests/<item_id:pk>/", data_subject_requests.DataSubjectRequestView.as_view(), name="dsr"),
    *[
        path(
            f"data-subject-requests/<item_id:pk>/{step}/",
            data_subject_requests.DataSubjectRequestStepView.as_view(step=step),
            name=f"dsr-{step}",
        )
        for step in data_subject_requests.STEPS
    ],
    # Escalations to a supervisor
    path("escalations/", escalations.EscalationsView.as_view(), name="escalations"),
    path("escalations/<item_id:pk>/resolve/", escalations.EscalationResolveView.as_view(), name="escalation-resolve"),
    # Review of new long-term memory
    path("review/knowledge/", review.PendingKnowledgeView.as_view(), name="review-knowledge"),
    path("review/knowledge/<item_id:pk>/", review.KnowledgeDecisionView.as_view(), name="review-knowledge-decide"),
    path("review/profile-versions/", review.PendingProfileVersionsView.as_view(), name="review-profile-versions"),
    path(
        "review/profile-versions/<item_id:pk>/",
        review.ProfileVersionDecisionView.as_view(),
        name="review-profile-version-decide",
    ),
    # Webhooks
    path("webhooks/", webhooks.WebhookEndpointsView.as_view(), name="webhooks"),
    path("webhooks/<item_id:pk>/", webhooks.WebhookEndpointView.as_view(), name="webhook"),
    path("webhooks/<item_id:pk>/secret/", webhooks.WebhookSecretView.as_view(), name="webhook-secret"),
    path("webhooks/<item_id:pk>/test/", webhooks.WebhookTestView.as_view(), name="webhook-test"),
    path("webhooks/<item_id:pk>/deliveries/", webhooks.WebhookDeliveriesView.as_view(), name="webhook-deliveries"),
    path(
        "webhook-deliveries/<item_id:pk>/replay/", webhooks.WebhookReplayView.as_view(), name="webhook-delivery-replay"
    ),
    re_path(r"^.*$", UnknownPath.as_view(), name="unknown"),
]
