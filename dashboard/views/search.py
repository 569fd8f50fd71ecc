"""Search across the tenant's users: the turns whose words match, highlighted, with who said them and whose memory
they belong to; every search is audited as a read of the memory it shows."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.console import actor_of, console_or_404, page_or_partial, request_id_of
from dashboard.forms import MemorySearchForm
from memory.models import PersonalDataAction
from memory.selectors.search import TenantSearch, tenant_search
from memory.services.governance import memory_search_record
from memory.services.personal_data import redactor_for

RESULTS_PER_PAGE = 20


@require_GET
@login_required
def memory_search(request: HttpRequest, slug: str) -> HttpResponse:
    """Every role that may read users' memory may search all of it (memory.roles: read)."""
    console = console_or_404(request, slug)
    form = MemorySearchForm(request.GET)
    query = form.cleaned_data.get("q", "") if form.is_valid() else ""
    found = TenantSearch(query=query)
    if query:
        number = request.GET.get("page")
        found = tenant_search(tenant=console.tenant, query=query, number=number, per_page=RESULTS_PER_PAGE)
        words = redactor_for(console.policy, PersonalDataAction.DO_NOT_STORE)(query)  # not what the tenant won't store
        memory_search_record(
            actor=actor_of(request), tenant_id=console.tenant.pk, end_user_ids=found.end_user_ids(),
            what=f"memory search across users for “{words[:100]}”", request_id=request_id_of(request),
        )  # fmt: skip
    context = {"console": console, "form": form, "found": found, "query": query}
    return render(request, page_or_partial(request, "dashboard/search.html", "results"), context)
