from __future__ import annotations

from django.urls import include, path

from dashboard.views import (
    actions,
    audit,
    gdpr,
    home,
    items,
    overview,
    personal_data,
    retention,
    review,
    tokens,
    users,
)

console = [
    path("", overview.overview, name="overview"),
    path("users/", users.users, name="users"),
    path("users/<int:end_user_id>/", users.user_detail, name="user"),
    path("users/<int:end_user_id>/profile/", users.profile_history, name="profile"),
    path("users/<int:end_user_id>/profile/edit/", actions.profile_change, name="profile_edit"),
    path("users/<int:end_user_id>/preview/", users.preview, name="preview"),
    path("users/<int:end_user_id>/gdpr/", gdpr.user_gdpr, name="user_gdpr"),
    path("users/<int:end_user_id>/export/", gdpr.export_start, name="export_start"),
    path("users/<int:end_user_id>/erase/", gdpr.erase, name="erase"),
    path("users/<int:end_user_id>/import/", gdpr.import_bundle, name="import_bundle"),
    path("users/<int:end_user_id>/import/<int:import_id>/", gdpr.import_confirm, name="import_confirm"),
    path("segments/<int:segment_id>/", items.segment, name="segment"),
    path("pages/<int:page_id>/", items.page, name="page"),
    path("knowledge/<int:entry_id>/", items.knowledge, name="knowledge"),
    path("act/<str:kind>/<int:item_id>/<str:action>/", actions.memory_action, name="action"),
    path("audit/", audit.audit_log, name="audit"),
    path("audit.csv", audit.audit_csv, name="audit_csv"),
    path("audit/verify/", audit.audit_chain, name="audit_verify"),
    path("gdpr/", gdpr.gdpr_home, name="gdpr"),
    path("exports/<int:job_id>/", gdpr.export_job, name="export"),
    path("exports/<int:job_id>/download/<str:token>/", gdpr.export_download, name="export_download"),
    path("receipts/<int:receipt_id>/", gdpr.receipt, name="receipt"),
    path("users/<int:end_user_id>/legal-hold/", retention.legal_hold, name="legal_hold"),
    path("retention/", retention.retention, name="retention"),
    path("retention/run/", retention.retention_run_now, name="retention_run_now"),
    path("retention/runs/<int:run_id>/", retention.retention_run, name="retention_run"),
    path("retention/assistants/<str:assistant_id>/", retention.retention_assistant, name="retention_assistant"),
    path("personal-data/", personal_data.policy, name="personal_data"),
    path("personal-data/scans/", personal_data.scan_start, name="personal_data_scan_start"),
    path("personal-data/scans/<int:scan_id>/", personal_data.scan, name="personal_data_scan"),
    path("users/<int:end_user_id>/reveal/", personal_data.reveal, name="reveal"),
    path("review/", review.review_queue, name="review"),
    path("review/<str:kind>/<int:item_id>/", review.review_decide, name="review_decide"),
    path("review/knowledge/<int:item_id>/reject/", review.review_reject_preview, name="review_reject"),
    path("tokens/", tokens.tokens, name="tokens"),
    path("tokens/new/", tokens.token_create, name="token_create"),
    path("tokens/<int:token_id>/revoke/", tokens.token_revoke, name="token_revoke"),
]

urlpatterns = [
    path("", home.home, name="home"),
    path("console/<slug:slug>/", include((console, "console"))),
]
