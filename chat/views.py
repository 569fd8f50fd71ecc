"""The end users' chat and their "what do you remember about me" page.

Every view works as plain HTML (forms post, then redirect) and with HTMX (the same template's partial comes back).
Only end users (accounts linked to an EndUser) get in; everyone else gets 404, and every memory item is looked up
within the logged-in end user's own memory, so other people's ids are 404 too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.text import get_valid_filename
from django.views.decorators.http import require_GET, require_POST

from chat.downloads import memory_download
from chat.forms import KnowledgeCorrectionForm, MessageForm, OutdatedForm
from chat.hidden_details import conversation_texts, hidden_details_note, memory_texts, pages_texts
from chat.http import HtmxHttpRequest
from chat.services import ReplyResult, reply_generate
from memory.items import ITEM_KINDS
from memory.models import Assistant, EndUser
from memory.not_found import not_found_message
from memory.selectors import self_service
from memory.selectors.case import case_search
from memory.selectors.items import knowledge_get, page_get, profile_version_get, segment_get
from memory.selectors.people import assistant_get, assistant_list
from memory.selectors.retention import legal_hold_active
from memory.selectors.tenancy import end_user_for_account
from memory.services import governance
from memory.services.audit import Actor
from memory.services.governance import memory_read_record
from memory.services.legal_hold import LegalHoldActive
from memory.services.turns import EndUserClosed, space_get_or_create
from memory.text import text_refusal

REASON = "requested by the end user"
CLOSED = "This account has been closed, so nothing more is stored: your message was not kept."
T = TypeVar("T")

# --- Access helpers -------------------------------------------------------------------------------------------------


def _chat_user_or_404(request: HtmxHttpRequest) -> EndUser:
    """The end user the logged-in account is; operators and strangers get 404."""
    end_user = end_user_for_account(request.user)
    if end_user is None:
        raise Http404("The chat is for end users")
    return end_user


def _pair_or_404(request: HtmxHttpRequest, assistant_id: str) -> tuple[EndUser, Assistant]:
    """The logged-in end user and the active assistant `assistant_id` of their own tenant."""
    end_user = _chat_user_or_404(request)
    try:
        return end_user, assistant_get(tenant=end_user.tenant, external_id=assistant_id, active=True)
    except Assistant.DoesNotExist as missing:
        raise Http404(not_found_message(missing)) from None


def _own_or_404(selector: Callable[..., T], end_user: EndUser, **lookup) -> T:
    """An item of the end user's own memory (`selector` scoped to them); anyone else's, or a gone one, is 404."""
    try:
        return selector(tenant=end_user.tenant, end_user=end_user, **lookup)
    except ObjectDoesNotExist as missing:
        raise Http404(not_found_message(missing)) from None


# --- The chat -------------------------------------------------------------------------------------------------------


@require_GET
@login_required
def chat_index(request: HtmxHttpRequest) -> HttpResponse:
    """Pick an assistant; with only one there is nothing to pick. Operators are sent back to their console."""
    end_user = end_user_for_account(request.user)
    if end_user is None:
        messages.info(request, "The chat is for end users. Your account is an operator's.")
        return redirect("home")
    assistants = list(assistant_list(tenant=end_user.tenant, active=True, order="name"))
    if len(assistants) == 1:
        return redirect("chat:conversation", assistant_id=assistants[0].external_id)
    return render(request, "chat/index.html", {"end_user": end_user, "assistants": assistants})


def _conversation_context(end_user: EndUser, assistant: Assistant, form: MessageForm) -> dict:
    space = self_service.space_find(end_user=end_user, assistant=assistant)
    turns = self_service.conversation_recent(space=space, limit=settings.CHAT_HISTORY_TURNS)
    context = {"end_user": end_user, "assistant": assistant, "space": space, "turns": turns, "form": form}
    return context | {"hidden_note": hidden_details_note(conversation_texts(turns))}


@require_GET
@login_required
def conversation(request: HtmxHttpRequest, assistant_id: str) -> HttpResponse:
    end_user, assistant = _pair_or_404(request, assistant_id)
    context = _conversation_context(end_user, assistant, MessageForm())
    return render(request, "chat/conversation.html", context)


@require_POST
@login_required
def message_send(request: HtmxHttpRequest, assistant_id: str) -> HttpResponse:
    """Answer one message: HTMX gets the new turn and a fresh form; plain HTML is redirected to the conversation."""
    end_user, assistant = _pair_or_404(request, assistant_id)
    form = MessageForm(request.POST)
    if not form.is_valid():
        return _composer_again(request, end_user, assistant, form, status=400)
    try:
        result = reply_generate(
            end_user=end_user,
            assistant=assistant,
            message=form.cleaned_data["message"],
            idempotency_key=form.cleaned_data["idempotency_key"],
        )
    except EndUserClosed:  # erased or deactivated while the reply was being made
        return HttpResponse(CLOSED, status=410, content_type="text/plain; charset=utf-8")
    if result.failed:
        form = MessageForm(initial={"message": form.cleaned_data["message"]})
        return _composer_again(request, end_user, assistant, form, status=503, error=_failure_text(assistant, result))
    if result.replayed and result.done and request.htmx and request.POST.get("retry"):
        # A retry after the first send's answer was lost on the way (the page shows no turn for it): show it now.
        return _turn_sent(request, assistant, result)
    if result.replayed:
        note = "That message was already answered." if result.done else "That message is still being answered."
        if not request.htmx:
            messages.info(request, note)
            return redirect("chat:conversation", assistant_id=assistant.external_id)
        return _composer_again(request, end_user, assistant, MessageForm(), status=200, note=note)
    if not request.htmx:
        return redirect(reverse("chat:conversation", args=[assistant.external_id]) + f"#turn-{result.reply.page_id}")
    return _turn_sent(request, assistant, result)


def _failure_text(assistant: Assistant, result: ReplyResult) -> str:
    return (
        f"{assistant.name} could not reply just now ({result.reply.error}). Nothing was stored; "
        "your message is still here, so you can send it again."
    )


def _turn_sent(request: HtmxHttpRequest, assistant: Assistant, result: ReplyResult) -> HttpResponse:
    context = {"assistant": assistant, "turn": self_service.turn_of(result.reply), "form": MessageForm(), "oob": True}
    return render(request, "chat/conversation.html#sent", context)


def _composer_again(
    request: HtmxHttpRequest,
    end_user: EndUser,
    assistant: Assistant,
    form: MessageForm,
    *,
    status: int,
    note: str = "",
    error: str = "",
) -> HttpResponse:
    """The form again (with its errors, a kept message, a note): alone for HTMX, in the whole page otherwise.

    HTMX swaps only 2xx answers, so it gets 200 whatever happened; the plain page carries the real status.
    """
    extra = {"form": form, "note": note, "error": error}
    if request.htmx:
        context = {"assistant": assistant, "oob": True, **extra}
        return render(request, "chat/conversation.html#composer", context)
    context = {**_conversation_context(end_user, assistant, form), **extra}
    return render(request, "chat/conversation.html", context, status=status)


# --- What do you remember about me ----------------------------------------------------------------------------------


PAGED = ("facts", "topics", "versions")  # the memory page's query parameters: the page shown of each list
SEARCH_MAX = 200  # characters of a search of one's memory


def _memory_query(params: Mapping[str, object]) -> str:
    """What the memory page shows, from `params`, as a query string ("?topics=3&q=Lisbon"): the page of each list
    past the first, and the search. The links and forms that lead back to the memory page carry it, so an action
    comes back to what the end user was reading."""
    numbers = {name: str(params.get(name, "")) for name in PAGED}
    kept = {name: number for name, number in numbers.items() if number.isdecimal() and int(number) > 1}
    search = _search_of(params)
    return f"?{urlencode(kept | ({'q': search} if search else {}))}" if kept or search else ""


def _search_of(params: Mapping[str, object]) -> str:
    """The search asked for; none when it holds what no stored text can (a NUL, a lone surrogate)."""
    search = str(params.get("q", "")).strip()[:SEARCH_MAX]
    return "" if text_refusal(search) else search


def _memory_context(request: HtmxHttpRequest, end_user: EndUser, assistant: Assistant, **extra) -> dict:
    """The memory page's context, at the pages of each list that the request's query string asks for; with a search
    (`q`), what it found in the end user's own memory, which the page shows instead of the lists."""
    pages = self_service.MemoryPages(**{name: request.GET.get(name) for name in PAGED})
    remembered = self_service.remembered_for(end_user=end_user, assistant=assistant, pages=pages)
    search = _search_of(request.GET)
    found = case_search(end_user=end_user, space=remembered.space, query=search) if search else None
    shown = {"facts": remembered.facts, "topics": remembered.segments, "versions": remembered.earlier_profiles}
    query = _memory_query({name: page.number for name, page in shown.items()} | {"q": search})
    context = {"end_user": end_user, "assistant": assistant, "remembered": remembered, "found": found}
    context["hold"] = legal_hold_active(end_user=end_user)
    context["hidden_note"] = hidden_details_note(memory_texts(remembered, found))
    return {**context, "memory_query": query, **extra}


@require_GET
@login_required
def memory(request: HtmxHttpRequest, assistant_id: str) -> HttpResponse:
    """The memory page, a page of each list at a time; HTMX (its pagers) gets the page's body alone."""
    end_user, assistant = _pair_or_404(request, assistant_id)
    template = "chat/memory.html#memory-body" if request.htmx else "chat/memory.html"
    return render(request, template, _memory_context(request, end_user, assistant))


@require_GET
@login_required
def memory_topic(request: HtmxHttpRequest, assistant_id: str, segment_id: int) -> HttpResponse:
    """One topic's turns: the list alone when the memory page opens the topic (HTMX), else a page of its own."""
    end_user, assistant = _pair_or_404(request, assistant_id)
    segment = _own_or_404(segment_get, end_user, assistant=assistant, id=segment_id)
    pages = self_service.topic_pages(segment=segment)
    context: dict[str, Any] = {"end_user": end_user, "assistant": assistant, "segment": segment, "pages": pages}
    context["hidden_note"] = hidden_details_note([segment.summary, *pages_texts(pages)])
    context["hold"] = legal_hold_active(end_user=end_user)
    context["memory_query"] = _memory_query(request.GET)  # back to the memory page as it was left
    template = "chat/topic.html#topic-turns" if request.htmx else "chat/topic.html"
    return render(request, template, context)


def _memory_changed(request: HtmxHttpRequest, end_user: EndUser, assistant: Assistant, note: str) -> HttpResponse:
    """After a change: HTMX gets the page's body again, with the note; plain HTML a redirect to the page."""
    if request.htmx:
        context = _memory_context(request, end_user, assistant, note=note)
        return render(request, "chat/memory.html#memory-body", context)
    messages.success(request, note)
    return _back_to_memory(request, assistant)


def _back_to_memory(request: HtmxHttpRequest, assistant: Assistant) -> HttpResponse:
    """A redirect to the memory page, at the pages the action was taken from."""
    return redirect(reverse("chat:memory", args=[assistant.external_id]) + _memory_query(request.GET))


HOLD_NOTE = (
    "This can't be forgotten right now: your data is under a legal hold, which keeps it unchanged until the hold "
    "is released. Nothing was deleted."
)


def _forget_refused(request: HtmxHttpRequest, end_user: EndUser, assistant: Assistant) -> HttpResponse:
    """A forget refused by a legal hold: the memory page again, saying why (HTMX: its body; plain HTML: a redirect)."""
    if request.htmx:
        context = _memory_context(request, end_user, assistant, note=HOLD_NOTE)
        return render(request, "chat/memory.html#memory-body", context)
    messages.error(request, HOLD_NOTE)
    return _back_to_memory(request, assistant)


# What the end user calls each kind in URLs and sentences, and the URL name of its forget.
FORGETTABLE = {
    "turns": ("page", "chat:page_forget", "this turn"),
    "topics": ("segment", "chat:segment_forget", "this topic and its turns"),
    "facts": ("knowledge", "chat:knowledge_forget", "this fact"),
    "profile": ("profile_version", "chat:profile_forget", "this version of your profile"),
}


@require_GET
@login_required
def forget_confirm(request: HtmxHttpRequest, assistant_id: str, what: str, item_id: int) -> HttpResponse:
    """Before deleting: what forgetting would remove, re-derive and redact (a dry run of the plan the forget runs)."""
    end_user, assistant = _pair_or_404(request, assistant_id)
    if what not in FORGETTABLE:
        raise Http404("No such memory")
    kind_name, url_name, label = FORGETTABLE[what]
    kind = ITEM_KINDS[kind_name]
    lookup: dict[str, Any] = (
        {"id": item_id} if kind_name == "profile_version" else {"assistant": assistant, "id": item_id}
    )
    item = _own_or_404(kind.get, end_user, **lookup)
    context = {"assistant": assistant, "url_name": url_name, "item_id": item_id, "what": label, "slug": what}
    context["impact"] = kind.item_impact(item).describe(kind_name)
    context["hold"] = legal_hold_active(end_user=end_user)
    context["memory_query"] = _memory_query(request.GET)
    template = "chat/forget_confirm.html#confirm" if request.htmx else "chat/forget_confirm.html"
    return render(request, template, context)


@require_POST
@login_required
def page_forget(request: HtmxHttpRequest, assistant_id: str, page_id: int) -> HttpResponse:
    end_user, assistant = _pair_or_404(request, assistant_id)
    page = _own_or_404(page_get, end_user, assistant=assistant, id=page_id)
    try:
        governance.page_forget(page=page, actor=Actor.end_user(end_user), reason=REASON)
    except LegalHoldActive:
        return _forget_refused(request, end_user, assistant)
    return _memory_changed(request, end_user, assistant, "Forgotten: that turn, and anything taken from it.")


@require_POST
@login_required
def segment_forget(request: HtmxHttpRequest, assistant_id: str, segment_id: int) -> HttpResponse:
    end_user, assistant = _pair_or_404(request, assistant_id)
    segment = _own_or_404(segment_get, end_user, assistant=assistant, id=segment_id)
    try:
        governance.segment_forget(segment=segment, actor=Actor.end_user(end_user), reason=REASON)
    except LegalHoldActive:
        return _forget_refused(request, end_user, assistant)
    return _memory_changed(request, end_user, assistant, "Forgotten: that topic and its turns.")


@require_POST
@login_required
def knowledge_forget(request: HtmxHttpRequest, assistant_id: str, entry_id: int) -> HttpResponse:
    end_user, assistant = _pair_or_404(request, assistant_id)
    entry = _own_or_404(knowledge_get, end_user, assistant=assistant, id=entry_id)
    try:
        governance.knowledge_forget(entry=entry, actor=Actor.end_user(end_user), reason=REASON)
    except LegalHoldActive:
        return _forget_refused(request, end_user, assistant)
    return _memory_changed(request, end_user, assistant, "Forgotten: that fact.")


@require_POST
@login_required
def profile_forget(request: HtmxHttpRequest, assistant_id: str, version_id: int) -> HttpResponse:
    end_user, assistant = _pair_or_404(request, assistant_id)
    version = _own_or_404(profile_version_get, end_user, id=version_id)
    try:
        governance.profile_version_forget(version=version, actor=Actor.end_user(end_user), reason=REASON)
    except LegalHoldActive:
        return _forget_refused(request, end_user, assistant)
    return _memory_changed(request, end_user, assistant, "Forgotten: that version of your profile.")


@require_POST
@login_required
def knowledge_correct(request: HtmxHttpRequest, assistant_id: str, entry_id: int) -> HttpResponse:
    """Correct a fact; an empty or too long correction shows the form again with the reason."""
    end_user, assistant = _pair_or_404(request, assistant_id)
    entry = _own_or_404(knowledge_get, end_user, assistant=assistant, id=entry_id)
    form = KnowledgeCorrectionForm(request.POST)
    if form.is_valid():
        try:
            governance.knowledge_update(
                entry=entry, text=form.cleaned_data["text"], actor=Actor.end_user(end_user), reason=REASON
            )
        except governance.GovernanceError as exc:
            form.add_error("text", str(exc))
        else:
            return _memory_changed(request, end_user, assistant, "Corrected: that fact now reads as you wrote it.")
    context = _memory_context(request, end_user, assistant, correction=form, correcting=entry.id)
    if request.htmx:
        return render(request, "chat/memory.html#memory-body", context)
    return render(request, "chat/memory.html", context, status=400)


# What the end user calls each kind that can be marked no longer true, and what they are told after each mark.
DATED = {"facts": ("knowledge", "that fact"), "turns": ("page", "that turn")}


def _dated_or_404(end_user: EndUser, assistant: Assistant, what: str, item_id: int):
    """The end user's own fact or turn (`what`: facts or turns) with its kind, or 404."""
    if what not in DATED:
        raise Http404("No such memory")
    kind = ITEM_KINDS[DATED[what][0]]
    return kind, _own_or_404(kind.get, end_user, assistant=assistant, id=item_id)


@require_POST
@login_required
def item_outdated(request: HtmxHttpRequest, assistant_id: str, what: str, item_id: int) -> HttpResponse:
    """Mark one of the end user's facts or turns as no longer true, with what is true now if they say; it stays
    listed as "used to", and is never used as current memory."""
    end_user, assistant = _pair_or_404(request, assistant_id)
    kind, item = _dated_or_404(end_user, assistant, what, item_id)
    form = OutdatedForm(request.POST)
    if not form.is_valid():
        return _memory_changed(request, end_user, assistant, "Nothing was changed: what is true now is too long.")
    who = {"actor": Actor.end_user(end_user), "reason": REASON}
    try:
        kind.item_mark(item, "outdated", replacement=form.cleaned_data["replacement"], **who)
    except governance.GovernanceError as exc:
        return _memory_changed(request, end_user, assistant, f"Nothing was changed: {exc}.")
    return _memory_changed(request, end_user, assistant, f"Noted: {DATED[what][1]} is no longer true.")


@require_POST
@login_required
def item_current(request: HtmxHttpRequest, assistant_id: str, what: str, item_id: int) -> HttpResponse:
    """Undo "no longer true" on one of the end user's facts or turns."""
    end_user, assistant = _pair_or_404(request, assistant_id)
    kind, item = _dated_or_404(end_user, assistant, what, item_id)
    kind.item_mark(item, "current", actor=Actor.end_user(end_user), reason=REASON)
    return _memory_changed(request, end_user, assistant, f"Noted: {DATED[what][1]} is true again.")


@require_POST
@login_required
def memory_pause(request: HtmxHttpRequest, assistant_id: str) -> HttpResponse:
    """Pause memory (turns are still answered, nothing is kept beyond the latest few) or resume it."""
    end_user, assistant = _pair_or_404(request, assistant_id)
    paused = request.POST.get("paused") == "true"
    space = space_get_or_create(end_user=end_user, assistant=assistant)
    governance.memory_pause_set(space=space, paused=paused, actor=Actor.end_user(end_user), reason=REASON)
    note = (
        f"Memory is paused: {assistant.name} still answers, but keeps only your latest few turns."
        if paused
        else f"Memory is on again: {assistant.name} remembers what you say."
    )
    return _memory_changed(request, end_user, assistant, note)


@require_POST
@login_required
def memory_export(request: HtmxHttpRequest, assistant_id: str) -> HttpResponse:
    """Download everything remembered about the end user as a zip (a readable page and JSON without vectors); the
    download is recorded in the audit trail."""
    end_user, _ = _pair_or_404(request, assistant_id)
    bundle = memory_download(end_user=end_user)
    memory_read_record(actor=Actor.end_user(end_user), end_user=end_user, what="export downloaded by the end user")
    response = HttpResponse(bundle, content_type="application/zip")
    day = f"{timezone.now():%Y-%m-%d}"
    filename = get_valid_filename(f"memory-{end_user.tenant.slug}-{end_user.external_id}-{day}.zip")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
