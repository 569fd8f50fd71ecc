"""The chat page: the conversation with what each reply used, and a message form that works with and without HTMX."""

from __future__ import annotations

import re

import pytest

from memory.llm import LLMError
from memory.models import ChatReply, Page
from memory.services.tenancy import assistant_create
from tests import builders

HTMX = {"HTTP_HX_REQUEST": "true"}


def key_in(body: str) -> str:
    return re.search(r'name="idempotency_key" value="([0-9a-f]+)"', body).group(1)


@pytest.fixture
def logged_in(client, alice):
    client.force_login(alice.account)
    return client


def post_message(client, message: str, key: str = "k-1", **headers):
    return client.post("/chat/ava/send/", {"message": message, "idempotency_key": key}, **headers)


def test_the_chat_index_goes_straight_to_the_only_assistant(logged_in):
    response = logged_in.get("/chat/")

    assert response.status_code == 302 and response["Location"] == "/chat/ava/"


def test_with_several_assistants_the_end_user_picks_one_of_their_tenant(logged_in, tenant, other_tenant):
    assistant_create(tenant=tenant, external_id="max", name="Max", persona="Max helps with invoices.")
    assistant_create(tenant=other_tenant, external_id="zed", name="Zed")

    body = logged_in.get("/chat/").content.decode()

    assert 'href="/chat/ava/"' in body and 'href="/chat/max/"' in body and "Max helps with invoices." in body
    assert "Zed" not in body


def test_an_empty_conversation_invites_the_end_user_to_say_hello(logged_in):
    body = logged_in.get("/chat/ava/").content.decode()

    assert "Say hello to Ava." in body
    assert 'hx-post="/chat/ava/send/"' in body and 'action="/chat/ava/send/"' in body and 'method="post"' in body
    assert 'hx-disabled-elt="find textarea, find button"' in body
    assert re.search(r'name="idempotency_key" value="[0-9a-f]{32}"', body)


def test_the_conversation_shows_each_turn_and_what_each_reply_used(offline, logged_in, alice, assistant, space):
    builders.knowledge(alice, text="Alice is vegetarian.")
    builders.segment_with_pages(
        space, summary="Lisbon holiday vegetarian food", messages=["Vegetarian food in Lisbon is easy to find."]
    )
    builders.page(space, user_message="An imported turn.", assistant_reply="With no chat reply.")
    post_message(logged_in, "Vegetarian food in Lisbon")

    body = logged_in.get("/chat/ava/").content.decode()

    assert "An imported turn." in body and "With no chat reply." in body
    assert body.count('<details class="memory-used">') == 1
    # the offline reply used what it mentions: not the unrelated imported turn
    assert "Memory used: 1 fact, 1 topic, 1 earlier turn<" in body
    assert '<li dir="auto">Alice is vegetarian.</li>' in body
    assert '<li dir="auto">Lisbon holiday vegetarian food</li>' in body
    assert ': you said “<span dir="auto">Vegetarian food in Lisbon is easy to find.</span>”' in body
    assert "The latest 1 turn of this conversation." not in body
    assert "offline reply" in body


def test_memory_forgotten_since_is_counted_not_shown(offline, logged_in, alice, space):
    entry = builders.knowledge(alice, text="Alice is vegetarian.")
    post_message(logged_in, "Is Alice vegetarian?")
    entry.delete()

    body = logged_in.get("/chat/ava/").content.decode()

    assert "1 item forgotten since." in body


def test_messages_and_replies_are_shown_as_text_never_as_html(llm, logged_in):
    llm("<img src=x onerror=alert(2)> sure")

    post_message(logged_in, "<script>alert(1)</script>")
    body = logged_in.get("/chat/ava/").content.decode()

    assert "<script>alert(1)</script>" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<img src=x" not in body and "&lt;img src=x onerror=alert(2)&gt; sure" in body


def test_sending_without_htmx_stores_the_turn_and_redirects_to_it(offline, logged_in):
    response = post_message(logged_in, "Hello Ava")

    page = Page.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/chat/ava/#turn-{page.id}"
    assert page.user_message == "Hello Ava"


def test_sending_with_htmx_returns_only_the_new_turn_and_a_fresh_form(offline, logged_in):
    response = post_message(logged_in, "Hello Ava", key="a" * 32, **HTMX)

    body = response.content.decode()
    page = Page.objects.get()
    assert response.status_code == 200 and "<html" not in body
    assert f'<li class="chat-turn" id="turn-{page.id}">' in body and "Hello Ava" in body
    assert '<details class="memory-used">' in body
    assert 'id="composer"' in body and 'hx-swap-oob="true"' in body
    assert key_in(body) != "a" * 32


@pytest.mark.parametrize(
    ("message", "error"),
    [("   ", "Write a message first."), ("x" * 101, "Your message is 101 characters long; the limit is 100.")],
)
def test_a_bad_message_shows_the_form_again_with_a_clear_error(offline, settings, logged_in, message, error):
    settings.MEMORY_MESSAGE_MAX_CHARS = 100

    page = post_message(logged_in, message)
    fragment = post_message(logged_in, message, **HTMX)

    assert page.status_code == 400 and error in page.content.decode() and "<html" in page.content.decode()
    assert fragment.status_code == 200 and error in fragment.content.decode()
    assert "<html" not in fragment.content.decode() and 'hx-swap-oob="true"' in fragment.content.decode()
    assert not ChatReply.objects.exists()


def test_a_failed_reply_says_so_and_keeps_the_message_to_send_again(llm, logged_in):
    llm(LLMError("the LLM timed out: Request timed out.", retryable=True), LLMError("down", retryable=True))

    page = post_message(logged_in, "Plan my week", key="k-1")
    fragment = post_message(logged_in, "Plan my week", key="k-2", **HTMX)

    for response, status in ((page, 503), (fragment, 200)):
        body = response.content.decode()
        assert response.status_code == status
        assert "Ava could not reply just now" in body and "your message is still here" in body
        assert re.search(r"<textarea[^>]*>\s*Plan my week</textarea>", body)
        assert key_in(body) not in ("k-1", "k-2")
    assert "the LLM timed out" in page.content.decode()
    assert not Page.objects.exists()


def test_a_double_submit_answers_once(offline, logged_in):
    post_message(logged_in, "Hello Ava", key="k-1")

    again = post_message(logged_in, "Hello Ava", key="k-1")
    again_htmx = post_message(logged_in, "Hello Ava", key="k-1", **HTMX)

    assert again.status_code == 302 and again["Location"] == "/chat/ava/"
    body = again_htmx.content.decode()
    assert "That message was already answered." in body and 'class="chat-turn"' not in body
    assert Page.objects.count() == 1


def test_a_retry_after_a_lost_answer_shows_the_turn_stored_the_first_time(offline, logged_in):
    post_message(logged_in, "Hello Ava", key="k-1")  # stored, but its answer never reached the page

    retried = logged_in.post(
        "/chat/ava/send/", {"message": "Hello Ava", "idempotency_key": "k-1", "retry": "1"}, **HTMX
    )

    body = retried.content.decode()
    page = Page.objects.get()
    assert f'id="turn-{page.id}"' in body and "Hello Ava" in body and "already answered" not in body
    assert key_in(body) != "k-1"  # a fresh form for the next message
    assert Page.objects.count() == 1


def test_the_message_box_is_limited_and_counted_as_the_server_limits_it(settings, logged_in):
    settings.MEMORY_MESSAGE_MAX_CHARS = 120

    body = logged_in.get("/chat/ava/").content.decode()

    textarea = re.search(r"<textarea[^>]*>", body).group(0)
    assert 'maxlength="120"' in textarea and 'dir="auto"' in textarea
    assert 'aria-describedby="composer-count"' in textarea
    assert 'id="composer-count" data-max="120">Up to 120 characters.' in body


def test_every_text_the_user_or_the_assistant_wrote_has_its_own_direction(offline, logged_in, alice, space):
    builders.knowledge(alice, text="אליס צמחונית.")
    post_message(logged_in, "שלום אווה")

    chat = logged_in.get("/chat/ava/").content.decode()
    memory = logged_in.get("/chat/ava/memory/").content.decode()

    assert '<p class="bubble-text" dir="auto">שלום אווה</p>' in chat
    assert re.search(r'<p class="bubble-text" dir="auto">[^<]+</p>', chat.split("bubble-assistant")[1])
    assert (
        '<span dir="auto">שלום אווה</span>' in memory
        and '<p class="memory-text" dir="auto">אליס צמחונית.</p>' in memory
    )


def test_the_chat_page_costs_the_same_queries_however_long_the_conversation(
    offline, logged_in, alice, space, django_assert_num_queries
):
    builders.profile(alice, text="Alice likes Lisbon.")
    builders.knowledge(alice, text="Alice is vegetarian.")
    builders.segment_with_pages(
        space, summary="Lisbon holiday vegetarian food", messages=["Vegetarian food in Lisbon is easy to find."]
    )
    for number in range(2):
        post_message(logged_in, f"Vegetarian food in Lisbon {number}", key=f"k-{number}")

    # session, user, end user, assistant, space, pages with replies, then pages, segments, knowledge, profiles used
    with django_assert_num_queries(10):
        logged_in.get("/chat/ava/")
    for number in range(2, 6):
        post_message(logged_in, f"Vegetarian food in Lisbon {number}", key=f"k-{number}")
    with django_assert_num_queries(10):
        logged_in.get("/chat/ava/")


def test_the_send_url_answers_only_post(logged_in):
    assert logged_in.get("/chat/ava/send/").status_code == 405


def test_a_message_whose_sender_is_erased_meanwhile_is_refused_and_nothing_is_kept(
    offline, logged_in, alice, monkeypatch
):
    from chat import services
    from memory.services.audit import Actor
    from memory.services.gdpr import user_erase

    reply = services.offline_reply

    def erase_meanwhile(**kwargs) -> str:
        user_erase(end_user=alice, actor=Actor.system("test"), legal_basis="GDPR Art. 17", dry_run=False)
        return reply(**kwargs)

    monkeypatch.setattr(services, "offline_reply", erase_meanwhile)

    response = post_message(logged_in, "Hello Ava")

    assert response.status_code == 410 and "nothing more is stored" in response.content.decode()
    assert not Page.objects.exists() and not ChatReply.objects.exists()
