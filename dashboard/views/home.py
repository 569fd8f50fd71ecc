"""The landing page after login: operators see their tenants, end users their way to the chat."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.contrib.staticfiles.storage import staticfiles_storage
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from memory.roles import PERMISSIONS, Permission, memberships_for
from memory.selectors.team import tenant_admins
from memory.selectors.tenancy import end_user_for_account


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    memberships = memberships_for(request.user)
    tenants = [
        {"tenant": m.tenant, "role": m.get_role_display(), "permissions": sorted(PERMISSIONS[m.role])}
        for m in memberships
    ]
    end_user = None if memberships else end_user_for_account(request.user)
    if end_user is not None:
        return redirect("chat:index")  # an end user's home is the chat
    return render(request, "dashboard/home.html", {"tenants": tenants, "end_user": end_user})


# What each permission lets a role do, in the words the 403 page uses.
PERMISSION_TEXT = {
    Permission.READ: "browse end users, their pages, topic segments, profiles and facts",
    Permission.WRITE: "edit, pin, lock and forget memories",
    Permission.GOVERN: "export and erase end users' data and read the audit log",
    Permission.MANAGE: "manage API tokens, assistants and operators",
}


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler403: what was refused, and for each of the operator's tenants what their role allows and does not,
    and who its admins are (whom to ask for another role)."""
    memberships = memberships_for(request.user)
    admins = tenant_admins(m.tenant_id for m in memberships) if memberships else {}
    roles = [
        {
            "membership": m,
            "allowed": [text for p, text in PERMISSION_TEXT.items() if p in PERMISSIONS[m.role]],
            "refused": [text for p, text in PERMISSION_TEXT.items() if p not in PERMISSIONS[m.role]],
            "admins": admins.get(m.tenant_id, []),
        }
        for m in memberships
    ]
    reason = str(exception) if exception and str(exception) else "Your account may not do this."
    return render(request, "403.html", {"reason": reason, "roles": roles}, status=403)


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for on their own: the static icon (an SVG every current browser draws)."""
    response = HttpResponseRedirect(staticfiles_storage.url("favicon.svg"))
    response["Cache-Control"] = "public, max-age=86400"
    return response
