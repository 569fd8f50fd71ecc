"""What every console view needs: the operator's tenant and role (through memory.roles, the one access helper),
selectors' answers as 404s, the actor for the audit log, a safe `next` URL, and the page-or-fragment choice for
HTMX requests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TypeVar

from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404, HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme

from dashboard.masking import CONSOLE_ATTRIBUTE
from memory.models import (
    EndUser,
    PersonalDataAction,
    PersonalDataPolicy,
    Role,
    Tenant,
)
from memory.not_found import not_found_message
from memory.roles import Permission, role_for, role_grants, tenant_for_operator_or_404
from memory.services.audit import Actor
from memory.services.governance import memory_read_record
from memory.services.personal_data import Redactor, redactor_for


@dataclass(frozen=True)
class Console:
    """The tenant an operator is working in and what their role lets them do there (templates read the flags).

    `revealed` is true on the one response that follows an audited reveal: personal data is shown unmasked.
    """

    tenant: Tenant
    role: Role
    revealed: bool = False

    @cached_property
    def policy(self) -> PersonalDataPolicy:
        """The tenant's personal-data policy (loaded with the tenant by memory.roles), or the defaults."""
        try:
            return self.tenant.personal_data_policy
        except PersonalDataPolicy.DoesNotExist:
            return PersonalDataPolicy(tenant=self.tenant)

    @cached_property
    def masker(self) -> Redactor:
        """What this operator sees masked: the mask-in-console categories (and stricter), unless revealed."""
        redactor = redactor_for(self.policy, PersonalDataAction.MASK_CONSOLE)
        return Redactor(redactor.detector, frozenset()) if self.revealed else redactor

    def mask(self, text: str) -> str:
        return self.masker(text or "")

    @property
    def masks_anything(self) -> bool:
        """Whether the policy masks any category in the console (and this view is not a reveal)."""
        return bool(self.masker)

    @property
    def can_reveal(self) -> bool:
        """Reveal masked personal data (with a reason, audited), edit the policy and review memory: govern."""
        return role_grants(self.role, Permission.GOVERN)

    @property
    def can_write(self) -> bool:
        return role_grants(self.role, Permission.WRITE)

    @property
    def can_govern(self) -> bool:
        return role_grants(self.role, Permission.GOVERN)


def console_or_404(request: HttpRequest, slug: str, permission: Permission = Permission.READ) -> Console:
    """The operator's tenant `slug`: 404 when they have no role in it, 403 when their role lacks `permission`."""
    tenant = tenant_for_operator_or_404(request.user, slug, permission)
    console = Console(tenant=tenant, role=role_for(request.user, tenant))
    setattr(request, CONSOLE_ATTRIBUTE, console)  # the response is masked with it (dashboard.masking)
    return console


def console_reveal(request: HttpRequest, console: Console) -> Console:
    """The console unmasked for this one response; call only after the reveal is audited."""
    revealed = replace(console, revealed=True)
    setattr(request, CONSOLE_ATTRIBUTE, revealed)
    return revealed


T = TypeVar("T")


def get_or_404(selector: Callable[..., T], /, **lookup) -> T:
    """`selector(**lookup)`, or 404 ("No such user.", memory.not_found) when it raises its model's DoesNotExist."""
    try:
        return selector(**lookup)
    except ObjectDoesNotExist as missing:
        raise Http404(not_found_message(missing)) from None


def actor_of(request: HttpRequest) -> Actor:
    return Actor.operator(request.user)


def request_id_of(request: HttpRequest) -> str:
    """The proxy's request id, when there is one, so audit entries can be matched with access logs."""
    return request.headers.get("X-Request-ID", "")[:64]


def safe_next(request: HttpRequest, default: str) -> str:
    """The `next` URL of the form or query when it points into this site, else `default`."""
    candidate = request.POST.get("next") or request.GET.get("next") or ""
    if candidate and url_has_allowed_host_and_scheme(candidate, {request.get_host()}, request.is_secure()):
        return candidate
    return default


def page_or_partial(request: HttpRequest, template: str, partial: str) -> str:
    """The whole page, or for an HTMX request only its `{% partialdef %}` fragment."""
    return f"{template}#{partial}" if request.htmx else template


def record_read(request: HttpRequest, end_user: EndUser, what: str, target_type: str = "", target_id=None) -> None:
    """Audit an operator's read of a user's memory, as changes are audited."""
    memory_read_record(
        actor=actor_of(request),
        end_user=end_user,
        what=what,
        target_type=target_type,
        target_id=target_id,
        request_id=request_id_of(request),
    )
