"""The kinds of memory item people change by hand (page, segment, knowledge, profile version), in one table.

Each kind names its model, what people call it, its flags, the fields its update service edits, how to find one in
a tenant, its update and forget services, (facts and profile versions) its review service and (facts and turns) its
outdated and current services. The console's actions, buttons and review queue, the API's item, outdated and review
routes and the not-found wording of every interface (memory.not_found) read this table: adding a flag or a kind
means changing it and its services, nothing else.
The services themselves need no table: an item knows its kind (`item_kind`) and its owner (`end_user`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.db.models import Model

from memory.models import KnowledgeEntry, Page, ProfileVersion, Segment
from memory.selectors.forgetting import (
    ForgetImpact,
    knowledge_forget_impact,
    page_forget_impact,
    profile_version_forget_impact,
    segment_forget_impact,
)
from memory.selectors.items import knowledge_get, page_get, profile_version_get, segment_get
from memory.services import governance, review, validity
from memory.services.governance import FLAG_VERBS

# What each action verb does to a flag: pin sets `pinned`, unpin clears it, and so on.
FLAG_ACTIONS = {verb: (flag, verb == on) for flag, (on, off) in FLAG_VERBS.items() for verb in (on, off)}


@dataclass(frozen=True)
class ItemKind:
    """One kind of memory item and what may be done to it."""

    name: str  # in URLs and audit entries (the model's item_kind)
    label: str  # in messages: "No such knowledge entry."
    model: type[Model]
    param: str  # the keyword its services take the item by
    flags: tuple[str, ...]  # of FLAG_VERBS
    editable: tuple[str, ...]  # the fields its update service rewrites; empty when its text is never edited
    get: Callable[..., Model]  # (*, tenant, id, ...) -> the item; raises model.DoesNotExist
    update: Callable[..., bool]
    forget: Callable[..., ForgetImpact]
    impact: Callable[..., ForgetImpact]  # what forget would do, computed by the same plan, changing nothing
    review: Callable[..., Model] | None = None  # approve, edit and approve, or reject one awaiting review
    # mark it no longer true (kept as history, with a replacing value) and current again: facts and turns
    outdated: Callable[..., bool] | None = None
    current: Callable[..., bool] | None = None

    @property
    def reviewable(self) -> bool:
        return self.review is not None

    @property
    def dated(self) -> bool:
        """Whether items of this kind can be marked outdated (and current again)."""
        return self.outdated is not None

    @property
    def actions(self) -> tuple[str, ...]:
        """Every action on an item of this kind: edit (when editable), each flag's set and clear, outdated and current
        (when dated), forget."""
        edit = ("edit",) if self.editable else ()
        dated = ("outdated", "current") if self.dated else ()
        return (*edit, *(verb for flag in self.flags for verb in FLAG_VERBS[flag]), *dated, "forget")

    def buttons(self, item: Model) -> list[str]:
        """The actions to offer on `item`: edit, pin or unpin and lock or unlock as its flags stand, outdated or
        current as its validity stands, forget."""
        edit = ["edit"] if self.editable else []
        dated = [("current" if item.valid_to else "outdated")] if self.dated else []  # type: ignore[attr-defined]
        return [*edit, *(FLAG_VERBS[flag][getattr(item, flag)] for flag in self.flags), *dated, "forget"]

    def item_update(self, item: Model, **changes) -> bool:
        """Call the update service with `changes` (its fields and flags, actor, reason, request_id)."""
        return self.update(**{self.param: item}, **changes)

    def item_forget(self, item: Model, **who) -> ForgetImpact:
        return self.forget(**{self.param: item}, **who)

    def item_mark(self, item: Model, action: str, **change) -> bool:
        """Mark `item` outdated (actor, reason, replacement, request_id) or current (actor, reason, request_id)."""
        service = {"outdated": self.outdated, "current": self.current}[action]
        assert service is not None, f"{self.name} is not dated"  # callers check `dated` first
        return service(**{self.param: item}, **change)

    def item_review(self, item: Model, **decision) -> Model:
        """Call the review service with the decision (decision, text, reason, actor, request_id)."""
        assert self.review is not None, f"{self.name} is not reviewable"  # callers check `reviewable` first
        return self.review(**{self.param: item}, **decision)

    def item_impact(self, item: Model) -> ForgetImpact:
        """What forgetting `item` would remove, re-derive and redact (a dry run)."""
        return self.impact(**{self.param: item})


ITEM_KINDS = {
    kind.name: kind
    for kind in (
        ItemKind(
            name="page",
            label="page",
            model=Page,
            param="page",
            flags=("pinned",),
            editable=(),
            get=page_get,
            update=governance.page_update,
            forget=governance.page_forget,
            impact=page_forget_impact,
            outdated=validity.page_mark_outdated,
            current=validity.page_mark_current,
        ),
        ItemKind(
            name="segment",
            label="segment",
            model=Segment,
            param="segment",
            flags=("pinned", "locked"),
            editable=("summary", "keywords"),
            get=segment_get,
            update=governance.segment_update,
            forget=governance.segment_forget,
            impact=segment_forget_impact,
        ),
        ItemKind(
            name="knowledge",
            label="knowledge entry",
            model=KnowledgeEntry,
            param="entry",
            flags=("pinned", "locked"),
            editable=("text",),
            get=knowledge_get,
            update=governance.knowledge_update,
            forget=governance.knowledge_forget,
            impact=knowledge_forget_impact,
            review=review.knowledge_review,
            outdated=validity.knowledge_mark_outdated,
            current=validity.knowledge_mark_current,
        ),
        ItemKind(
            name="profile_version",
            label="profile version",
            model=ProfileVersion,
            param="version",
            flags=("locked",),
            editable=(),
            get=profile_version_get,
            update=governance.profile_version_update,
            forget=governance.profile_version_forget,
            impact=profile_version_forget_impact,
            review=review.profile_version_review,
        ),
    )
}
