"""The OpenAI-compatible memory proxy, driven by the `openai` client itself with its base_url at the live test
server, and a fake OpenAI-compatible model (evaluation.fake_llm, over real HTTP) behind it as the configured model."""

from __future__ import annotations

import openai
import pytest

from memory.models import ActorKind, AuditEntry, ChatReply, Page, ReplyStatus, Segment, SegmentVisit
from memory.services.audit import Actor
from memory.services.gdpr import user_erase
from memory.services.governance import memory_pause_set, page_forget
from memory.services.turns import space_get_or_create
from tests.foundation.processes import wait_for
from tests.integrations.conftest import make_token
from tests.integrations.conftest import proxy_client as client

FAKE_REPLY = "Thanks, I will remember that."
ASSISTANT = {"X-MemoryOS-Assistant": "ava"}


def ask(live_server, token, text="What is my beagle called?", user="alice", **options):
    return client(live_server, token).chat.completions.create(
        model="fake-load-model",
        messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}],
        user=user,
        extra_headers=ASSISTANT,
        **options,
    )


def test_a_completion_is_answered_by_the_model_with_memory_and_the_turn_is_stored(live_server, model, memory, token):
    completion = ask(live_server, token)

    assert completion.object == "chat.completion"
    assert completion.choices[0].message.content == FAKE_REPLY
    assert completion.usage.total_tokens > 0
    reply = ChatReply.objects.get(pk=completion.memoryos_reply_id)
    assert reply.status == ReplyStatus.DONE and reply.mode == "llm"
    assert (reply.page.user_message, reply.page.assistant_reply) == ("What is my beagle called?", FAKE_REPLY)
    assert memory.mtm_page.pk in [page["id"] for page in reply.memory_used["pages"]]
    injected = AuditEntry.objects.get(action="reply.memory_injected", target_id=reply.space_id)
    assert injected.actor_kind == ActorKind.API_TOKEN


def test_a_streamed_completion_arrives_in_pieces_and_is_stored_once_complete(live_server, model, memory, token):
    stream = ask(live_server, token, stream=True)
    chunks = list(stream)

    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == FAKE_REPLY
    assert len([chunk for chunk in chunks if chunk.choices and chunk.choices[0].delta.content]) > 1
    assert chunks[-1].usage.completion_tokens > 0
    page = Page.objects.get(user_message="What is my beagle called?")
    assert page.assistant_reply == FAKE_REPLY and page.reply.status == ReplyStatus.DONE


def test_a_client_that_hangs_up_mid_stream_leaves_nothing_stored(live_server, model, memory, token):
    stream = ask(live_server, token, stream=True)
    first = next(iter(stream))
    stream.close()

    reply = ChatReply.objects.get(pk=first.memoryos_reply_id)
    assert wait_for(lambda: ChatReply.objects.get(pk=reply.pk).status == ReplyStatus.FAILED, timeout=30)
    assert "disconnected" in ChatReply.objects.get(pk=reply.pk).error
    assert not Page.objects.filter(user_message="What is my beagle called?").exists()


def test_without_a_model_the_offline_reply_answers_from_memory(live_server, memory, token):
    completion = ask(live_server, token, text="What is my beagle called?")
    streamed = "".join(c.choices[0].delta.content or "" for c in ask(live_server, token, stream=True) if c.choices)

    assert "Biscuit" in completion.choices[0].message.content
    assert "Biscuit" in streamed
    assert completion.model == "fake-load-model"
    assert [m.id for m in client(live_server, token).models.list()] == ["memoryos-offline"]


def test_models_lists_the_configured_model(live_server, model, token):
    assert [m.id for m in client(live_server, token).models.list()] == ["fake-load-model"]


def test_errors_come_in_openais_shape_and_store_nothing(live_server, model, memory, tenant, token):
    reader = make_token(tenant, "read")

    with pytest.raises(openai.AuthenticationError):
        ask(live_server, None)
    with pytest.raises(openai.PermissionDeniedError, match="'write' scope"):
        ask(live_server, reader)
    with pytest.raises(openai.BadRequestError) as no_user:
        client(live_server, token).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Hi"}], extra_headers=ASSISTANT
        )
    with pytest.raises(openai.BadRequestError, match="last message must be the user"):
        client(live_server, token).chat.completions.create(
            model="m", messages=[{"role": "assistant", "content": "Hi"}], user="alice"
        )
    with pytest.raises(openai.NotFoundError, match="No such assistant"):
        client(live_server, token).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "Hi"}],
            user="alice",
            extra_headers={"X-MemoryOS-Assistant": "nobody"},
        )

    assert no_user.value.body["param"] == "user"
    assert not ChatReply.objects.exists()


def test_another_tenants_token_gets_nothing_of_this_tenants_memory(live_server, model, memory, stranger_token):
    completion = ask(live_server, stranger_token)

    reply = ChatReply.objects.get(pk=completion.memoryos_reply_id)
    assert reply.space.tenant.slug == "globex"
    assert reply.memory_used["pages"] == [] and reply.memory_used["user_knowledge"] == []
    assert Page.objects.filter(space__tenant__slug="acme").count() == 2


def test_paused_memory_is_not_visited_and_forgotten_memory_is_not_injected(
    live_server, model, memory, alice, assistant, token
):
    space = space_get_or_create(end_user=alice, assistant=assistant)
    memory_pause_set(space=space, paused=True, actor=Actor.system("test"), reason="Alice paused")
    visits = Segment.objects.get(pk=memory.segment.pk).n_visit

    paused = ChatReply.objects.get(pk=ask(live_server, token).memoryos_reply_id)

    assert Segment.objects.get(pk=memory.segment.pk).n_visit == visits
    assert not SegmentVisit.objects.exists()  # not even queued for the worker
    assert memory.mtm_page.pk in [page["id"] for page in paused.memory_used["pages"]]
    page_forget(page=memory.mtm_page, actor=Actor.system("test"), reason="Alice asked")

    after = ChatReply.objects.get(pk=ask(live_server, token, text="Tell me about Biscuit").memoryos_reply_id)

    assert memory.mtm_page.pk not in [page["id"] for page in after.memory_used["pages"]]


def test_an_erased_user_is_refused_and_never_recreated(live_server, model, memory, alice, token):
    user_erase(end_user=alice, actor=Actor.system("test"), legal_basis="Art. 17", dry_run=False)

    with pytest.raises(openai.APIStatusError) as refused:
        ask(live_server, token)
    with pytest.raises(openai.APIStatusError):
        list(ask(live_server, token, stream=True))

    assert refused.value.status_code == 410 and refused.value.body["code"] == "erased"
    assert not Page.objects.filter(space__end_user__external_id="alice").exists()
