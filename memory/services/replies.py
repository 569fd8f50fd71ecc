"""The record of each chat reply: claimed by its idempotency key, then completed with its page or failed.

The chat's generation loop (chat.services.reply_generate) calls these; it never writes ChatReply itself.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from memory.models import ChatReply, MemorySpace, Page, PersonalDataAction, PersonalDataPolicy, ReplyStatus
from memory.selectors.personal_data import personal_data_policy_or_default
from memory.services.personal_data import redactor_for
from memory.steps.types import Usage


def chat_reply_claim(
    *, space: MemorySpace, idempotency_key: str, user_message: str, policy: PersonalDataPolicy | None = None
) -> tuple[ChatReply, bool]:
    """The reply for (space, key), and whether this caller now owns generating it.

    A new key creates a pending reply (claimed). A failed reply is claimed again by exactly one caller (a
    conditional UPDATE), so a retry with the same key generates once more; so is a done reply with no page (the
    model called tools: no turn was stored, and its calls are not kept to be answered again). A pending reply, or
    one done with its page, is returned as it is (not claimed), so a double submit creates no second turn. Commits
    at once, so a concurrent submit sees it. The message is kept without the tenant's do-not-store data (`policy`,
    read here when the caller has not).
    """
    policy = policy or personal_data_policy_or_default(tenant=space.tenant_id)
    user_message = redactor_for(policy, PersonalDataAction.DO_NOT_STORE)(user_message)
    # one INSERT in autocommit (a failed one spoils nothing); inside a caller's transaction, under a savepoint
    claiming = transaction.atomic() if connection.in_atomic_block else contextlib.nullcontext()
    try:
        with claiming:
            return ChatReply.objects.create(
                space=space, idempotency_key=idempotency_key, user_message=user_message
            ), True
    except IntegrityError:
        pass  # the key is taken: a double submit, a retry or a race with another request
    # a failed reply may be retried; so may one left pending by a process that died (older than any attempt can
    # take); created_at restarts with the new attempt so that exactly one caller wins the conditional UPDATE
    now = timezone.now()
    stale = now - timedelta(seconds=settings.LLM_TIMEOUT * (settings.LLM_MAX_RETRIES + 1) + 60)
    retried = (
        ChatReply.objects.filter(space=space, idempotency_key=idempotency_key)
        .filter(
            Q(status=ReplyStatus.FAILED)
            | Q(status=ReplyStatus.PENDING, created_at__lt=stale)
            | Q(status=ReplyStatus.DONE, page__isnull=True)
        )
        .update(status=ReplyStatus.PENDING, user_message=user_message, error="", completed_at=None, created_at=now)
    )
    reply = ChatReply.objects.get(space=space, idempotency_key=idempotency_key)
    return reply, retried == 1


def chat_reply_complete(
    *, reply: ChatReply, page: Page | None, mode: str, memory_used: dict, dropped: list[dict], usage: Usage
) -> None:
    """Mark a claimed reply done: link the page (the stored turn), what memory it used and dropped, what it cost.

    `page` is None for a reply that called tools instead of answering: done, with no turn stored.
    """
    reply.status = ReplyStatus.DONE
    reply.page = page
    reply.mode = mode
    reply.memory_used = memory_used
    reply.dropped = dropped
    reply.llm_calls = usage.calls
    reply.prompt_tokens = usage.prompt_tokens
    reply.completion_tokens = usage.completion_tokens
    reply.error = ""
    reply.completed_at = timezone.now()
    reply.save(
        update_fields=[
            "status",
            "page",
            "mode",
            "memory_used",
            "dropped",
            "llm_calls",
            "prompt_tokens",
            "completion_tokens",
            "error",
            "completed_at",
        ]
    )


def chat_reply_fail(*, reply: ChatReply, mode: str, error: str, usage: Usage) -> None:
    """Mark a claimed reply failed with a message for the user; it keeps the user's message and stores no page.

    A reply erased meanwhile (with its end user) is left gone: the UPDATE simply matches no row.
    """
    reply.status = ReplyStatus.FAILED
    reply.mode = mode
    reply.error = error[:2000]
    reply.llm_calls = usage.calls
    reply.prompt_tokens = usage.prompt_tokens
    reply.completion_tokens = usage.completion_tokens
    reply.completed_at = timezone.now()
    fields = ["status", "mode", "error", "llm_calls", "prompt_tokens", "completion_tokens", "completed_at"]
    ChatReply.objects.filter(pk=reply.pk).update(**{name: getattr(reply, name) for name in fields})
