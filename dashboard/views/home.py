"""The landing page after login: operators see their tenants, end users their way to the chat."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from memory.roles import PERMISSIONS, memberships_for
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
