from __future__ import annotations

from django.urls import path

from chat import views

app_name = "chat"

urlpatterns = [
    path("", views.chat_index, name="index"),
    path("<str:assistant_id>/", views.conversation, name="conversation"),
    path("<str:assistant_id>/send/", views.message_send, name="send"),
    path("<str:assistant_id>/memory/", views.memory, name="memory"),
    path("<str:assistant_id>/memory/pause/", views.memory_pause, name="memory_pause"),
    path("<str:assistant_id>/memory/export/", views.memory_export, name="memory_export"),
    path(
        "<str:assistant_id>/memory/<str:what>/<int:item_id>/forget/confirm/",
        views.forget_confirm,
        name="forget_confirm",
    ),
    path("<str:assistant_id>/memory/turns/<int:page_id>/forget/", views.page_forget, name="page_forget"),
    path("<str:assistant_id>/memory/topics/<int:segment_id>/", views.memory_topic, name="memory_topic"),
    path("<str:assistant_id>/memory/topics/<int:segment_id>/forget/", views.segment_forget, name="segment_forget"),
    path("<str:assistant_id>/memory/facts/<int:entry_id>/correct/", views.knowledge_correct, name="knowledge_correct"),
    path("<str:assistant_id>/memory/facts/<int:entry_id>/forget/", views.knowledge_forget, name="knowledge_forget"),
    path("<str:assistant_id>/memory/<str:what>/<int:item_id>/outdated/", views.item_outdated, name="item_outdated"),
    path("<str:assistant_id>/memory/<str:what>/<int:item_id>/current/", views.item_current, name="item_current"),
    path("<str:assistant_id>/memory/profile/<int:version_id>/forget/", views.profile_forget, name="profile_forget"),
]
